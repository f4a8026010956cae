package control

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// On a Corefile reload the new instance acquires a file before the old
// one releases it: the series stays until the last holder lets go, and
// says 0 for a file its holder found bad.
func TestFileOKShared(t *testing.T) {
	const good, bad = "/etc/coredns/metrics-test-nodes.yaml", "/etc/coredns/metrics-test-overrides.yaml"
	acquireFiles([]string{good, bad}, map[string]bool{bad: true}) // the old instance
	acquireFiles([]string{good}, nil)                             // the new one
	if v, ok := fileOKOf(t, good); !ok || v != 1 {
		t.Errorf("file_ok of %s = %v (%v), want 1", good, v, ok)
	}
	if v, ok := fileOKOf(t, bad); !ok || v != 0 {
		t.Errorf("file_ok of %s = %v (%v), want 0", bad, v, ok)
	}
	releaseFiles([]string{good, bad}) // the old instance stops
	if _, ok := fileOKOf(t, good); !ok {
		t.Errorf("file_ok of %s went while the new instance serves it", good)
	}
	if _, ok := fileOKOf(t, bad); ok {
		t.Errorf("file_ok of %s stayed after its last holder stopped", bad)
	}
	releaseFiles([]string{good})
	if _, ok := fileOKOf(t, good); ok {
		t.Errorf("file_ok of %s stayed after its last holder stopped", good)
	}
}

// The build gauge has one series per open database, by its format's kind
// and type, and none of the databases before.
func TestRecordDBInfo(t *testing.T) {
	dbBuild.WithLabelValues("ipdb", "ipdb").Set(1) // a database a reload dropped
	db := fixtureDB(t)
	recordDBInfo(db)
	if n := testutil.CollectAndCount(dbBuild); n != len(db.Info()) {
		t.Errorf("Expected %d series, got %d", len(db.Info()), n)
	}
	for _, m := range db.Info() {
		if got := testutil.ToFloat64(dbBuild.WithLabelValues(m.Kind, m.DatabaseType)); got != float64(m.BuildEpoch) {
			t.Errorf("%s %s: %v, want %d", m.Kind, m.DatabaseType, got, m.BuildEpoch)
		}
	}
	if len(db.Info()) != 2 || db.Info()[0].Kind != "city" || db.Info()[1].Kind != "asn" {
		t.Errorf("Info() = %+v, want city and asn", db.Info())
	}
}
