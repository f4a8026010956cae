package control

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLoadSetsNoGauge: loading a block (a Corefile reload that may still
// fail, a tool's check) leaves the live gauges alone; the instance sets
// them when it starts serving.
func TestLoadSetsNoGauge(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	now := time.Now().UTC().Format(time.RFC3339)
	q := "quality:\n  - {from: {province: ZJ}, node: sh, rtt_ms: 9, loss: 0, measured: " + now + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "q.yaml"), []byte(q), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := qualityRows.WithLabelValues("fresh")
	fresh.Set(-1)
	sentinel := dbBuild.WithLabelValues("sentinel", "none")
	sentinel.Set(-1)
	c := newTestControl(t, dir, "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\nquality q.yaml\n}")
	if got := testutil.ToFloat64(fresh); got != -1 {
		t.Errorf("Expected loading to leave quality_rows alone, got %g", got)
	}
	if got := testutil.ToFloat64(sentinel); got != -1 {
		t.Errorf("Expected loading to leave the database gauges alone, got %g", got)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(fresh); got != 1 {
		t.Errorf("Expected quality_rows{state=fresh} 1 once serving, got %g", got)
	}
	if got := testutil.CollectAndCount(dbBuild); got != 1 {
		t.Errorf("Expected one database series once serving, got %d", got)
	}
}
