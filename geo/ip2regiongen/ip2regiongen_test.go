package ip2regiongen_test

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

func writeCSV(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCSVRoundTrip: rows read from CSV come back from the file built of
// them, for both families, and the output is deterministic.
func TestCSVRoundTrip(t *testing.T) {
	p := writeCSV(t, `# test data
network,country,province,city,isp,iso2
202.101.172.0/24,中国,浙江省,杭州市,电信,CN
36.110.0.1-36.110.0.6,中国,北京市,,移动,CN
240e:388::/32,中国,广东省,深圳市,联通,CN
`)
	v4, v6, err := ip2regiongen.ReadCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(v4) != 2 || len(v6) != 1 {
		t.Fatalf("got %d IPv4 and %d IPv6 rows", len(v4), len(v6))
	}
	b4, err := ip2regiongen.Build(ip2regiongen.Meta{IPVersion: 4}, v4)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ip2regiongen.Build(ip2regiongen.Meta{IPVersion: 4}, []ip2regiongen.Rec{v4[1], v4[0]})
	if !bytes.Equal(b4, again) {
		t.Error("the same segments in another order give other bytes")
	}
	b6, err := ip2regiongen.Build(ip2regiongen.Meta{IPVersion: 6}, v6)
	if err != nil {
		t.Fatal(err)
	}
	r4, err := ip2region.FromBytes("v4", b4)
	if err != nil {
		t.Fatal(err)
	}
	r6, err := ip2region.FromBytes("v6", b6)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    *ip2region.Reader
		addr string
		raw  string
	}{
		{r4, "202.101.172.1", "中国|浙江省|杭州市|电信|CN"},
		{r4, "36.110.0.6", "中国|北京市|0|移动|CN"},
		{r6, "240e:388:ff::1", "中国|广东省|深圳市|联通|CN"},
	} {
		rec, _, ok := tc.r.Lookup(netip.MustParseAddr(tc.addr))
		if !ok || rec.Raw != tc.raw {
			t.Errorf("Lookup(%s) = %q %v, want %q", tc.addr, rec.Raw, ok, tc.raw)
		}
	}
}

// TestCSVErrors: a bad row names the file, the line and the column.
func TestCSVErrors(t *testing.T) {
	head := "network,country,province,city,isp,iso2\n"
	tests := []struct{ body, want string }{
		{"net,country,province,city,isp,iso2\n", `in.csv:1:1: header column 1 is "net"`},
		{head + "10.0.0.1/8,中国,,,,CN\n", "in.csv:2:1: network 10.0.0.1/8 has host bits set"},
		{head + "10.0.0.9-10.0.0.1,中国,,,,CN\n", "ends before it starts"},
		{head + "10.0.0.0-::1,中国,,,,CN\n", "one family"},
		{head + "10.0.0.0/8,中|国,,,,CN\n", "in.csv:2:12: country value"},
		{head + "10.0.0.0/8,中国\n", "in.csv:2"},
		{head, "no networks"},
		{"", "no header"},
	}
	for _, tc := range tests {
		_, _, err := ip2regiongen.ReadCSV(writeCSV(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadCSV(%q) = %v, want %q", tc.body, err, tc.want)
		}
	}
}
