package control

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

const (
	fixtureNodes = testsupport.FixtureNodes
	fixtureBlock = "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n%s}"
)

func fixture(t testing.TB, nodes string) string { return testsupport.Fixture(t, nodes) }

// answerOf is the first address c decides for name from a client in
// subnet ecs, of family qtype (A when 0).
func answerOf(t *testing.T, c *Control, name, ecs string, qtype ...uint16) string {
	t.Helper()
	cl, err := decide.ParseClient(ecs)
	if err != nil {
		t.Fatal(err)
	}
	qt := dns.TypeA
	if len(qtype) > 0 {
		qt = qtype[0]
	}
	var out decide.Outcome
	if err := c.Decider().For(context.Background(), cl, name, qt, &out); err != nil {
		t.Fatalf("Expected an answer for %s, got %v", name, err)
	}
	for _, a := range out.Addresses() {
		return a.String()
	}
	t.Fatalf("Expected an address for %s, got none", name)
	return ""
}

// touch rewrites a file with a modification time that a reload will notice.
func touch(t *testing.T, path, content string, age int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(time.Duration(age) * time.Second)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestReloadNodeTable(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	nodes := filepath.Join(dir, "nodes.yaml")
	serial := g.View().Serial

	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected 192.0.2.3 before the reload, got %s", got)
	}

	// A broken table is rejected: the previous one keeps serving.
	touch(t, nodes, fixtureNodes+"  - name: broken.example.org\n    nodes: [nobody]\n", 1)
	reloadSettled(g)
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected the previous table to keep serving, got %s", got)
	}
	if g.View().Serial != serial {
		t.Errorf("Expected the SOA serial unchanged after a rejected reload")
	}

	// A good table is swapped in, and the serial moves on.
	touch(t, nodes, strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.33", 1), 2)
	reloadSettled(g)
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.33" {
		t.Fatalf("Expected the new table's address, got %s", got)
	}
	if g.View().Serial <= serial {
		t.Errorf("Expected the SOA serial to increase, got %d after %d", g.View().Serial, serial)
	}
}

func TestReloadGeoDatabase(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	city := filepath.Join(dir, "city.mmdb")
	if got := answerOf(t, g, "www.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected Shanghai's node, got %s", got)
	}

	// A corrupt database is rejected.
	touch(t, city, "not a database", 1)
	reloadSettled(g)
	if got := answerOf(t, g, "www.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected the previous database to keep serving, got %s", got)
	}

	// 2.0.0.0/24 moves to Beijing: the new database is used, the location cache emptied.
	if err := mmdbgen.WriteCity(city, []mmdbgen.City{
		{Network: "2.0.0.0/24", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4},
	}); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(2 * time.Second)
	os.Chtimes(city, mt, mt)
	reloadSettled(g)
	if got := answerOf(t, g, "www.example.org", "2.0.0.0/24"); got != "192.0.2.4" {
		t.Fatalf("Expected Beijing's node after the database reload, got %s", got)
	}
}

// A rewrite of the same size within one mtime tick is still noticed.
func TestReloadSameSizeRewrite(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	nodes := filepath.Join(dir, "nodes.yaml")
	fi, err := os.Stat(nodes)
	if err != nil {
		t.Fatal(err)
	}
	touch(t, nodes, strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.9", 1), 0)
	os.Chtimes(nodes, fi.ModTime(), fi.ModTime())
	reloadSettled(g)
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.9" {
		t.Fatalf("Expected the rewritten table, got %s", got)
	}
}

// A reload that leaves the probes as they were keeps the running checker,
// so the nodes' states carry over.
func TestReloadKeepsUnchangedProbes(t *testing.T) {
	probed := strings.Replace(fixtureNodes, "lat: 31.23, lon: 121.47}",
		"lat: 31.23, lon: 121.47, probe: {address: \"127.0.0.1:9\", hold_down: 1m}}", 1)
	dir := fixture(t, probed)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	before := g.Checker()
	touch(t, filepath.Join(dir, "nodes.yaml"), strings.Replace(probed, "192.0.2.1]", "192.0.2.11]", 1), 1)
	reloadSettled(g)
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected sh's node, got %s", got)
	}
	if g.Table().Nodes[0].V4[0].String() != "192.0.2.11" {
		t.Fatalf("Expected the new table to be loaded")
	}
	if g.Checker() != before {
		t.Errorf("Expected the checker to be kept when no probe changed")
	}
}

// reloadSettled runs the two file checks a change needs to be loaded.
func reloadSettled(g *Control) {
	g.Reload()
	g.Reload()
}

// A node table is loaded only once it looked the same on two checks in a
// row: a copy read mid-write that still parses is never published.
func TestReloadWaitsForSettledFile(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	nodes := filepath.Join(dir, "nodes.yaml")
	// Cut before the last record: valid YAML, one record short.
	cut := fixtureNodes[:strings.Index(fixtureNodes, "  - name: v6.example.org")]
	touch(t, nodes, cut, 1)
	g.Reload()
	touch(t, nodes, strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.33", 1), 2)
	g.Reload()
	if got := answerOf(t, g, "v6.example.org", "2400::/48", dns.TypeAAAA); got == "" {
		t.Fatalf("Expected the record that only the cut copy lacks to keep answering")
	}
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected no change before the file settled, got %s", got)
	}
	g.Reload()
	if got := answerOf(t, g, "sh.example.org", "2.0.0.0/24"); got != "192.0.2.33" {
		t.Fatalf("Expected the settled file to be loaded, got %s", got)
	}
}

// The overrides reload on their own: a good file moves the pinned
// network, a pin to an unknown node is rejected, counted and flagged
// while the previous pins keep serving.
func TestReloadOverrides(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	ov := filepath.Join(dir, "overrides.yaml")
	pin := func(node string) string { return "overrides:\n  - cidr: 1.0.9.0/24\n    nodes: [" + node + "]\n" }
	write(t, ov, pin("sh"))
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "overrides overrides.yaml\nreload 0\n"))
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(t, g, "www.example.org", "1.0.9.0/24"); got != "192.0.2.3" {
		t.Fatalf("Expected the pin to sh, got %s", got)
	}
	logs := captureLog(t)

	touch(t, ov, pin("bj"), 1)
	reloadSettled(g)
	if got := answerOf(t, g, "www.example.org", "1.0.9.0/24"); got != "192.0.2.4" {
		t.Fatalf("Expected the new pin to bj, got %s", got)
	}
	if !strings.Contains(logs.String(), "Reloaded overrides "+ov+": 1 entry (gslb example.org.)") {
		t.Errorf("Expected the overrides' reload line, got %q", logs)
	}

	touch(t, ov, pin("nobody"), 2)
	reloadSettled(g)
	if got := answerOf(t, g, "www.example.org", "1.0.9.0/24"); got != "192.0.2.4" {
		t.Fatalf("Expected the previous pins to keep serving, got %s", got)
	}
	if !strings.Contains(logs.String(), "Rejected reload, keeping the previous version") || !strings.Contains(logs.String(), "nobody") {
		t.Errorf("Expected the rejection naming the unknown node, got %q", logs)
	}
	if v, ok := fileOKOf(t, ov); !ok || v != 0 {
		t.Errorf("Expected file_ok 0 for the rejected overrides, got %v (%v)", v, ok)
	}

	touch(t, ov, pin("hz-a"), 3)
	reloadSettled(g)
	if got := answerOf(t, g, "www.example.org", "1.0.9.0/24"); got != "192.0.2.1" {
		t.Fatalf("Expected the fixed file's pin to hz-a, got %s", got)
	}
	if v, _ := fileOKOf(t, ov); v != 1 {
		t.Errorf("Expected file_ok 1 once a good file loads, got %v", v)
	}
}
