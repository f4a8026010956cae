package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
)

// at writes content at path with modification time unix.
func at(t *testing.T, path, content string, unix int64) string {
	t.Helper()
	write(t, path, content)
	if err := os.Chtimes(path, time.Unix(unix, 0), time.Unix(unix, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// The content's serial is the newest of the text files' times and the
// databases' build dates, and never 0.
func TestContentSerial(t *testing.T) {
	dir := t.TempDir()
	nodes := at(t, filepath.Join(dir, "nodes.yaml"), "n", 1_800_000_000)
	ov := at(t, filepath.Join(dir, "overrides.yaml"), "o", 1_800_000_100)
	qm := at(t, filepath.Join(dir, "quality.yaml"), "q", 1_700_000_000)
	cn := at(t, filepath.Join(dir, "canary.yaml"), "c", 1_800_000_200)
	db := fixtureDB(t) // built at mmdbgen.BuildEpoch, before all of them
	tests := []struct {
		name string
		o    config.Options
		db   *geo.DB
		want uint32
	}{
		{"nothing", config.Options{}, nil, 1},
		{"missing file", config.Options{Nodes: filepath.Join(dir, "missing.yaml")}, nil, 1},
		{"database only", config.Options{}, db, mmdbgen.BuildEpoch},
		{"nodes", config.Options{Nodes: nodes}, db, 1_800_000_000},
		{"overrides newer", config.Options{Nodes: nodes, Overrides: ov, Quality: qm}, db, 1_800_000_100},
		{"canary newest", config.Options{Nodes: nodes, Overrides: ov, Canary: &config.Canary{File: cn}}, db, 1_800_000_200},
	}
	for _, tc := range tests {
		if got := contentSerial(&tc.o, tc.db); got != tc.want {
			t.Errorf("%s: serial %d, want %d", tc.name, got, tc.want)
		}
	}
}

func fixtureDB(t *testing.T) *geo.DB {
	t.Helper()
	dir := fixture(t, fixtureNodes)
	db, err := geo.Open(filepath.Join(dir, "city.mmdb"), filepath.Join(dir, "asn.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// The serial follows the files forward, never back: not on a reload of an
// older file, not in the next instance of the same block; the operator's
// serial stands as given.
func TestNextSerial(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	nodes := filepath.Join(dir, "nodes.yaml")
	// The last serials are per process, by zones and node table: this
	// test's table is in a directory of its own.
	block := fmt.Sprintf(fixtureBlock, "reload 0\n%s")
	at(t, nodes, fixtureNodes, 1_800_000_000)

	c := newTestControl(t, dir, fmt.Sprintf(block, ""))
	if got := c.View().Serial; got != 1_800_000_000 {
		t.Fatalf("Serial %d, want the node table's time 1800000000", got)
	}

	// An older file with other content: loaded, the serial stays.
	old := strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.30", 1)
	at(t, nodes, old, 1_700_000_000)
	reloadSettled(c)
	if got := answerOf(t, c, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.30" {
		t.Fatalf("Expected the older file loaded, got %s", got)
	}
	if got := c.View().Serial; got != 1_800_000_000 {
		t.Errorf("After an older file: serial %d, want 1800000000 kept", got)
	}

	// A newer file moves it forward.
	at(t, nodes, strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.33", 1), 1_800_000_500)
	reloadSettled(c)
	if got := c.View().Serial; got != 1_800_000_500 {
		t.Errorf("After a newer file: serial %d, want 1800000500", got)
	}

	// The next instance of the block (a Corefile reload) given an older
	// file starts from the last serial.
	at(t, nodes, fixtureNodes, 1_700_000_000)
	next := newTestControl(t, dir, fmt.Sprintf(block, ""))
	if got := next.View().Serial; got != 1_800_000_500 {
		t.Errorf("The next instance: serial %d, want 1800000500", got)
	}

	fixed := newTestControl(t, dir, fmt.Sprintf(block, "soa {\nserial 42\n}\n"))
	if got := fixed.View().Serial; got != 42 {
		t.Errorf("soa serial 42: serial %d", got)
	}
}
