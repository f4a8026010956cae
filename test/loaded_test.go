package test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/table"
)

// TestLoadedLog: an instance says at startup what it serves from (each
// database with its type and build date, the node table's counts, the
// overrides, quality and canary files' counts), and a file reload names
// only what changed.
func TestLoadedLog(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	example, err := os.ReadFile(repoFile(t, "nodes.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nodes := writeFile(t, dir, "nodes.yaml", string(example))
	cand := writeFile(t, dir, "candidate.yaml", string(example))
	ov := writeFile(t, dir, "overrides.yaml", "overrides:\n  - {cidr: 1.0.1.0/24, nodes: [bj-unicom]}\n  - {cidr: 1.0.2.0/24, nodes: [sh-telecom]}\n")
	now := time.Now().UTC().Format(time.RFC3339)
	q := writeFile(t, dir, "quality.yaml", fmt.Sprintf("quality:\n  - {from: {province: ZJ, isp: telecom}, node: hz-telecom, rtt_ms: 8, loss: 0, measured: %s}\n", now))
	s := startServer(t, gslbCorefile(t, nodes, "overrides "+ov+"\nquality "+q+"\ncanary "+cand+" 10\nreload 1s"))

	city, asn := repoFile(t, "demo/gslb-demo-City.mmdb"), repoFile(t, "demo/gslb-demo-ASN.mmdb")
	db, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Load(nodes, []string{"example.org."}, 60)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range db.Info() {
		opt := map[string]string{"city": "geoip", "asn": "asn"}[m.Kind]
		want = append(want, fmt.Sprintf("%s %s (%s, built %s)", opt, m.Path, m.DatabaseType,
			time.Unix(int64(m.BuildEpoch), 0).UTC().Format(time.DateOnly)))
	}
	counts := fmt.Sprintf("%d nodes, %d records", len(tbl.Nodes), len(tbl.Records))
	want = append(want,
		"node table "+nodes+": "+counts,
		"overrides "+ov+": 2 entries",
		"quality "+q+": 1 row",
		"canary node table "+cand+": "+counts+", 10% of the subnets",
		"(gslb example.org.)")
	line := logs.line(t, "Loaded ")
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("Startup line lacks %q: %s", w, line)
		}
	}
	if !strings.Contains(line, "[INFO]") {
		t.Errorf("Startup line is not at INFO: %s", line)
	}
	if n := strings.Count(logs.String(), "Loaded "); n != 1 {
		t.Errorf("%d startup lines for one gslb block, want 1", n)
	}

	// Only the overrides change: the reload line names only them.
	writeFile(t, dir, "overrides.yaml", "overrides:\n  - {cidr: 1.0.1.0/24, nodes: [bj-unicom]}\n  - {cidr: 1.0.2.0/24, nodes: [sh-telecom]}\n  - {cidr: 1.0.3.0/24, nodes: [gz-mobile]}\n")
	line = logs.line(t, "Reloaded ")
	if !strings.Contains(line, "Reloaded overrides "+ov+": 3 entries (gslb example.org.)") {
		t.Errorf("Reload line %q, want only the overrides with 3 entries", line)
	}
	for _, other := range []string{"node table", "geoip", "quality", "canary"} {
		if strings.Contains(line, other) {
			t.Errorf("Reload line names %s, which did not change: %s", other, line)
		}
	}

	// Then only the node table's records: one more line, naming only it.
	logs.Reset()
	more := strings.Replace(string(example), "  - name: api.example.org", "  - name: img.example.org\n  - name: api.example.org", 1)
	if more == string(example) {
		t.Fatal("nodes.example.yaml has no api.example.org record to add one before")
	}
	writeFile(t, dir, "nodes.yaml", more)
	line = logs.line(t, "Reloaded ")
	wantLine := fmt.Sprintf("Reloaded node table %s (records changed): %d nodes, %d records (gslb example.org.)", nodes, len(tbl.Nodes), len(tbl.Records)+1)
	if !strings.Contains(line, wantLine) {
		t.Errorf("Reload line %q, want %q", line, wantLine)
	}

	// A Corefile reload starts a new instance, which says what it loaded.
	logs.Reset()
	s.restart(t, gslbCorefile(t, nodes, "overrides "+ov+"\nreload 1s"))
	line = logs.line(t, "Loaded ")
	for _, w := range []string{"node table " + nodes + ": " + fmt.Sprintf("%d nodes, %d records", len(tbl.Nodes), len(tbl.Records)+1),
		"overrides " + ov + ": 3 entries", "geoip " + city} {
		if !strings.Contains(line, w) {
			t.Errorf("Line after a Corefile reload lacks %q: %s", w, line)
		}
	}
	if strings.Contains(line, "quality") || strings.Contains(line, "canary") {
		t.Errorf("Line after a Corefile reload names files the new instance does not use: %s", line)
	}
}

// TestLoadedLogDatabases: a database update logs a reload line naming the
// databases with their type and build date, and nothing else.
func TestLoadedLogDatabases(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n  - {id: db-hz, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30.27, lon: 120.16}\nrecords:\n  - name: www.example.org\n")
	startServer(t, corefile(city, asn, nodes, "reload 1s"))
	if line := logs.line(t, "Loaded "); !strings.Contains(line, "node table "+nodes+": 1 node, 1 record") {
		t.Errorf("Startup line: %s", line)
	}
	testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "58.0.0.0/12", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
		{Network: "59.0.0.0/16", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.23, Lon: 121.47},
		{Network: "60.0.0.0/16", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4},
	}, []mmdbgen.ASN{{Network: "58.0.0.0/12", ASN: 4134, Org: "CHINANET"}})
	line := logs.line(t, "Reloaded ")
	db, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range db.Info() {
		want := fmt.Sprintf("%s (%s, built %s)", m.Path, m.DatabaseType, time.Unix(int64(m.BuildEpoch), 0).UTC().Format(time.DateOnly))
		if !strings.Contains(line, want) {
			t.Errorf("Reload line lacks %q: %s", want, line)
		}
	}
	if !strings.HasPrefix(line[strings.Index(line, "Reloaded "):], "Reloaded geoip "+city) || strings.Contains(line, "node table") {
		t.Errorf("Reload line %q, want only the databases", line)
	}

	// Only the City database is replaced: the line names only it.
	logs.Reset()
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(city, later, later); err != nil {
		t.Fatal(err)
	}
	line = logs.line(t, "Reloaded ")
	if !strings.Contains(line, "Reloaded geoip "+city+" (") || strings.Contains(line, asn) {
		t.Errorf("Reload line %q, want only the City database", line)
	}
}
