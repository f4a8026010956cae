package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/table"
)

// TestOverridesCarrier: an override's carrier typo is refused with the
// file, line and field; an alias and a raw carrier name pass.
func TestOverridesCarrier(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	tb, err := table.Load(filepath.Join(dir, "nodes.yaml"), []string{"example.org."}, 60)
	if err != nil {
		t.Fatal(err)
	}
	write := func(isp string) string {
		p := filepath.Join(dir, "overrides.yaml")
		y := "overrides:\n  - cidr: 1.0.0.0/24\n    nodes: [sh]\n  - cidr: 1.0.1.0/24\n    location: {country: CN, province: ZJ, isp: " + isp + "}\n"
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write("telcom")
	_, _, err = loadOverrides(p, 0, tb)
	want := "overrides " + p + `: line 4: overrides[1]: field location.isp: unknown carrier "telcom" (did you mean telecom?)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Expected %q, got %v", want, err)
	}
	for _, isp := range []string{"ctcc", "CUCC", "CMNET", "China Telecom Zhejiang"} {
		if _, _, err := loadOverrides(write(isp), 0, tb); err != nil {
			t.Errorf("isp %q: %v", isp, err)
		}
	}
}
