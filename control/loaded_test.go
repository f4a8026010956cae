package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/locate"
)

// The startup line names every database with its option, type and build
// date, the node table's counts, the files beside it and the zones.
func TestLoadedLine(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	write(t, filepath.Join(dir, "overrides.yaml"), "overrides:\n  - {cidr: 1.0.9.0/24, nodes: [sh]}\n")
	c := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "overrides overrides.yaml\nadmin 127.0.0.1:0\n"))
	built := time.Unix(mmdbgen.BuildEpoch, 0).UTC().Format(time.DateOnly)
	want := []string{
		"Loaded geoip " + filepath.Join(dir, "city.mmdb") + " (GeoLite2-City, built " + built + ")",
		", asn " + filepath.Join(dir, "asn.mmdb") + " (GeoLite2-ASN, built " + built + ")",
		"; node table " + filepath.Join(dir, "nodes.yaml") + ": 4 nodes, 3 records",
		"; overrides " + filepath.Join(dir, "overrides.yaml") + ": 1 entry",
		"; admin API 127.0.0.1:0 (no token, no state file: changes last until a restart)",
	}
	line := c.loadedLine()
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("Loaded line %q\nwants %q", line, w)
		}
	}
	if !strings.HasSuffix(line, " (gslb example.org.)") {
		t.Errorf("Loaded line %q does not end with the zones", line)
	}
}

// A reload's line names only what changed: the node table with what of it
// changed, and only the database that was reloaded.
func TestReloadedLine(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	c := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	logs := captureLog(t)

	touch(t, filepath.Join(dir, "nodes.yaml"), strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.33", 1), 1)
	reloadSettled(c)
	line := logs.String()
	if !strings.Contains(line, "Reloaded node table "+filepath.Join(dir, "nodes.yaml")+" (nodes changed): 4 nodes, 3 records (gslb example.org.)") {
		t.Errorf("Expected the node table's reload line, got %q", line)
	}
	if strings.Contains(line, "geoip") {
		t.Errorf("A node table reload names the databases: %q", line)
	}

	logs.Reset()
	city := filepath.Join(dir, "city.mmdb")
	if err := mmdbgen.WriteCity(city, []mmdbgen.City{{Network: "2.0.0.0/24", Country: "CN", Province: "BJ"}}); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(city, mt, mt); err != nil {
		t.Fatal(err)
	}
	reloadSettled(c)
	line = logs.String()
	if !strings.Contains(line, "Reloaded geoip "+city+" (GeoLite2-City, built ") {
		t.Errorf("Expected the City database's reload line, got %q", line)
	}
	if strings.Contains(line, "asn.mmdb") || strings.Contains(line, "node table") {
		t.Errorf("A City reload names what did not change: %q", line)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct{ got, want string }{
		{describeAdmin(&admin.Config{Addr: "127.0.0.1:9154"}), "admin API 127.0.0.1:9154 (no token, no state file: changes last until a restart)"},
		{describeAdmin(&admin.Config{Addr: "10.0.0.1:9154", Token: "t", State: "/var/lib/gslb/state.yaml"}), "admin API 10.0.0.1:9154 (token required, state /var/lib/gslb/state.yaml)"},
		{describeRedis(&locate.RedisConfig{Addrs: []string{"10.0.0.1:6379"}}), "redis 10.0.0.1:6379"},
		{describeRedis(&locate.RedisConfig{Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, MasterName: "gslb"}), "redis 10.0.0.1:26379, 10.0.0.2:26379 (sentinels of gslb)"},
		{count(0, "node", "nodes"), "0 nodes"},
		{count(1, "entry", "entries"), "1 entry"},
		{count(2, "entry", "entries"), "2 entries"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("Got %q, want %q", tc.got, tc.want)
		}
	}
}

// describeDB names each database by its format's Corefile option, and
// only those at paths when paths is not nil.
func TestDescribeDB(t *testing.T) {
	db := fixtureDB(t)
	all := describeDB(db, nil)
	if !strings.HasPrefix(all, "geoip ") || !strings.Contains(all, ", asn ") {
		t.Errorf("describeDB(all) = %q, want geoip then asn", all)
	}
	var asn string
	for _, m := range db.Info() {
		if m.Kind == "asn" {
			asn = m.Path
		}
	}
	if got := describeDB(db, []string{asn}); !strings.HasPrefix(got, "asn "+asn+" (GeoLite2-ASN, built ") || strings.Contains(got, "geoip") {
		t.Errorf("describeDB(asn) = %q", got)
	}
	if got := describeDB(db, []string{}); got != "" {
		t.Errorf("describeDB(none) = %q, want nothing", got)
	}
}
