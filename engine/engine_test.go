package engine_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// engineNodes is the fixture's node table with an HTTPS record and a
// record whose only node is down to its probe.
const engineNodes = testsupport.FixtureNodes + `  - name: svc.example.org
    nodes: [sh, bj]
    https: {alpn: [h2]}
  - name: fb.example.org
    nodes: [sh]
    fallback: backup.example.net
`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fixture writes the databases, the node table and a Corefile of one
// gslb block for example.org with extra options; it returns the
// Corefile's path.
func fixture(t *testing.T, nodes, extra string) (dir, corefile string) {
	t.Helper()
	dir = testsupport.Fixture(t, nodes)
	corefile = writeFile(t, dir, "Corefile", "example.org {\n    root "+dir+"\n    gslb {\n        geoip city.mmdb\n        asn asn.mmdb\n        nodes nodes.yaml\n"+
		extra+"    }\n}\n")
	return dir, corefile
}

func newEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	e, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// decideFor decides name's qtype for a client given as the tool takes it:
// ADDRESS or ADDRESS/PREFIX.
func decideFor(t *testing.T, e *engine.Engine, client, name string, qtype uint16) engine.Outcome {
	t.Helper()
	c, err := decide.ParseClient(client)
	if err != nil {
		t.Fatal(err)
	}
	o, err := e.Decide(context.Background(), c, name, qtype)
	if err != nil {
		t.Fatalf("Decide(%s, %q): %v", client, name, err)
	}
	return o
}

// explainFor is decideFor's explanation.
func explainFor(t *testing.T, e *engine.Engine, client, name string, qtype uint16) *decide.Explanation {
	t.Helper()
	c, err := decide.ParseClient(client)
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Explain(context.Background(), c, name, qtype)
	if err != nil {
		t.Fatalf("Explain(%s, %q): %v", client, name, err)
	}
	return x
}

// TestCheck: a block that loads passes; a node table the server would
// refuse fails with its file; -nodes replaces the block's table; a zone
// picks one of several blocks.
func TestCheck(t *testing.T) {
	dir, cf := fixture(t, engineNodes, "")
	if w, err := engine.Check(engine.Config{Corefile: cf}); err != nil || len(w) != 0 {
		t.Fatalf("Check of a good block: %v %v", w, err)
	}
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(engineNodes, "nodes: [sh, bj]", "nodes: [sh, nowhere]", 1))
	_, err := engine.Check(engine.Config{Corefile: cf, Nodes: bad})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("Expected the bad table refused with its file and the unknown node, got %v", err)
	}
	// A Corefile whose own table is bad passes with a good one given.
	_, badCf := fixture(t, strings.Replace(engineNodes, "nodes: [sh, bj]", "nodes: [sh, nowhere]", 1), "")
	if _, err := engine.Check(engine.Config{Corefile: badCf}); err == nil {
		t.Errorf("Expected the Corefile's bad table refused")
	}
	if _, err := engine.Check(engine.Config{Corefile: badCf, Nodes: filepath.Join(dir, "nodes.yaml")}); err != nil {
		t.Errorf("Expected the given table to replace the bad one, got %v", err)
	}

	none := writeFile(t, dir, "Corefile.none", "example.org {\n    whoami\n}\n")
	if _, err := engine.Check(engine.Config{Corefile: none}); !errors.Is(err, engine.ErrNoBlock) {
		t.Errorf("Expected ErrNoBlock, got %v", err)
	}
	if _, err := engine.Check(engine.Config{Corefile: filepath.Join(dir, "missing")}); err == nil {
		t.Errorf("Expected a missing Corefile refused")
	}
	two := writeFile(t, dir, "Corefile.two", "example.org {\n    gslb {\n        geoip "+dir+"/city.mmdb\n        nodes "+dir+"/nodes.yaml\n    }\n}\n"+
		"example.net {\n    gslb {\n        geoip "+dir+"/city.mmdb\n        nodes "+bad+"\n    }\n}\n")
	if _, err := engine.Check(engine.Config{Corefile: two}); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("Expected every block checked without a zone, got %v", err)
	}
	if _, err := engine.Check(engine.Config{Corefile: two, Zone: "Example.ORG"}); err != nil {
		t.Errorf("Expected example.org's block alone checked, got %v", err)
	}
	if _, err := engine.Check(engine.Config{Corefile: two, Zone: "example.com"}); err == nil || !strings.Contains(err.Error(), "example.com.") {
		t.Errorf("Expected an unknown zone named, got %v", err)
	}
	if _, err := engine.New(context.Background(), engine.Config{Corefile: two}); err == nil || !strings.Contains(err.Error(), "-zone") {
		t.Errorf("Expected New to ask which of two blocks, got %v", err)
	}
}

// TestCheckStateWarning: an admin state file that does not load is a
// warning: the server starts without it.
func TestCheckStateWarning(t *testing.T) {
	dir := t.TempDir()
	state := writeFile(t, dir, "state.json", "{not json")
	token := writeFile(t, dir, "token", "3f9a1c7e52d84b06a1e9c4f27d6b8e03\n")
	if err := os.Chmod(token, 0o600); err != nil {
		t.Fatal(err)
	}
	_, cf := fixture(t, engineNodes, "        admin 127.0.0.1:0 {\n            token_file "+token+"\n            state "+state+"\n        }\n")
	w, err := engine.Check(engine.Config{Corefile: cf})
	if err != nil {
		t.Fatalf("Expected the block to load, got %v", err)
	}
	if len(w) != 1 || !strings.Contains(w[0], "state.json") || !strings.Contains(w[0], "refuses admin changes") {
		t.Errorf("Expected one warning naming the state file, got %q", w)
	}
}

// TestEngineDecide: the engine decides as the server counts: the node, its
// tier, the province match, the subnet and the scope an ECS-caching
// resolver keeps the answer for.
func TestEngineDecide(t *testing.T) {
	_, cf := fixture(t, engineNodes, "")
	e := newEngine(t, engine.Config{Corefile: cf})
	ctx := context.Background()
	if got := strings.Join(e.Records(), " "); got != "www.example.org. sh.example.org. v6.example.org. svc.example.org. fb.example.org." {
		t.Errorf("Records() = %s", got)
	}
	if !strings.HasSuffix(e.NodesFile(), "nodes.yaml") {
		t.Errorf("NodesFile() = %s", e.NodesFile())
	}
	if err := e.CheckName("SH.example.org"); err != nil {
		t.Errorf("CheckName(SH.example.org): %v", err)
	}
	if err := e.CheckName("mail.example.org"); err == nil || !strings.Contains(err.Error(), "www.example.org.") {
		t.Errorf("Expected an unknown name refused with the known ones, got %v", err)
	}

	o := decideFor(t, e, "1.0.1.7", "", dns.TypeA)
	if (o.Node != "hz-a" && o.Node != "hz-b") || o.Answer != o.Node || !o.Located || !o.Same || o.Policy != "stable" {
		t.Errorf("Expected a Zhejiang node for a Zhejiang client, got %+v", o)
	}
	if o.Subnet.String() != "1.0.1.0/24" || o.Client.String() != "1.0.1.7" || o.Scope == 0 || o.Scope > 24 || o.DistanceKm < 0 {
		t.Errorf("Expected the client's /24 with a scope within it, got %+v", o)
	}
	o = decideFor(t, e, "1.0.1.0/24", "sh.example.org", dns.TypeA)
	if o.Node != "sh" || !o.Located || o.Same || o.DistanceKm <= 0 || o.Scope > 24 {
		t.Errorf("Expected sh for a Zhejiang client, another province, got %+v", o)
	}
	// A client in China without a province is not located.
	if o := decideFor(t, e, "3.1.2.3", "", dns.TypeA); o.Node == "" || o.Located || o.Same {
		t.Errorf("Expected an answer that counts in no province, got %+v", o)
	}
	// NODATA: no node has an address of the type.
	o = decideFor(t, e, "2.0.0.1", "sh.example.org", dns.TypeAAAA)
	if o.Node != "" || o.Tier != "" || o.Located || o.DistanceKm != -1 || o.Answer != "" {
		t.Errorf("Expected NODATA, got %+v", o)
	}
	if o := decideFor(t, e, "2400::1", "v6.example.org", dns.TypeAAAA); o.Node != "bj" || o.Subnet.String() != "2400::/48" || !o.Same {
		t.Errorf("Expected bj for a Beijing IPv6 client, got %+v", o)
	}
	if _, err := e.Decide(ctx, decide.Client{Addr: netip.MustParseAddr("1.0.1.7"), Bits: -1}, "nope.example.org", dns.TypeA); err == nil {
		t.Errorf("Expected an unknown name refused")
	}
}

// TestEngineDecideMatchesExplain: a replay's counting and the explanation
// are one decision: the same node, tier, policy and ECS scope per client.
func TestEngineDecideMatchesExplain(t *testing.T) {
	_, cf := fixture(t, engineNodes, "")
	e := newEngine(t, engine.Config{Corefile: cf})
	var clients []string
	for i := range 16 {
		clients = append(clients, "1.0."+strconv.Itoa(i*16)+".0/24", "2.0.0."+strconv.Itoa(i*16), "2400:0:"+strconv.Itoa(i)+"::/48")
	}
	for _, c := range clients {
		for _, name := range []string{"www.example.org", "svc.example.org"} {
			for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS} {
				o := decideFor(t, e, c, name, qtype)
				x := explainFor(t, e, c, name, qtype)
				if o.Node != x.Node || o.Tier != x.Tier && o.Node != "" || o.Policy != x.Policy || o.Subnet.String() != x.Client.Subnet {
					t.Errorf("%s %s %s: decided %+v, explained node %q tier %s policy %s subnet %s", c, name, dns.TypeToString[qtype], o, x.Node, x.Tier, x.Policy, x.Client.Subnet)
				}
				if x.Scope != nil && *x.Scope != o.Scope {
					t.Errorf("%s %s %s: decided scope /%d, explained /%d", c, name, dns.TypeToString[qtype], o.Scope, *x.Scope)
				}
			}
		}
	}
}

// TestEngineHTTPS: an HTTPS query counts as its A decision, answers with
// both decisions' nodes, and is NODATA for a record without https.
func TestEngineHTTPS(t *testing.T) {
	_, cf := fixture(t, engineNodes, "")
	e := newEngine(t, engine.Config{Corefile: cf})
	o := decideFor(t, e, "2400::/48", "svc.example.org", dns.TypeHTTPS)
	a := decideFor(t, e, "2400::/48", "svc.example.org", dns.TypeA)
	aaaa := decideFor(t, e, "2400::/48", "svc.example.org", dns.TypeAAAA)
	if o.Node != a.Node || o.Tier != a.Tier || o.Answer != a.Node+" "+aaaa.Node || aaaa.Node != "bj" {
		t.Errorf("Expected HTTPS counted as A (%s) answering %s %s, got %+v", a.Node, a.Node, aaaa.Node, o)
	}
	if o.Scope != max(a.Scope, aaaa.Scope) || o.Scope == 0 {
		t.Errorf("Expected the longer scope of %d and %d, got %d", a.Scope, aaaa.Scope, o.Scope)
	}
	// sh has no IPv6: its half answers "-".
	o = decideFor(t, e, "2.0.0.1", "svc.example.org", dns.TypeHTTPS)
	if o.Node != "sh" || o.Answer != "sh bj" && o.Answer != "sh -" {
		t.Errorf("Expected sh counted for a Shanghai client, got %+v", o)
	}
	o = decideFor(t, e, "2.0.0.0/24", "www.example.org", dns.TypeHTTPS)
	if o.Node != "" || o.Tier != "" || o.Scope != 0 || o.DistanceKm != -1 || o.Subnet.String() != "2.0.0.0/24" || o.Policy != "stable" {
		t.Errorf("Expected NODATA with scope 0 for a record without https, got %+v", o)
	}
}

// TestEngineProbe: with Probe the engine probes every node once, over
// real HTTP; a failing node is down and the decision fails over, a record
// whose only node is down falls back; without Probe every node is up and
// a note says so.
func TestEngineProbe(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }))
	defer bad.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer good.Close()
	probe := func(url string) string {
		return ", probe: {type: http, url: \"" + url + "\", timeout: 2s, interval: 5s}}"
	}
	nodes := engineNodes
	for id, url := range map[string]string{"hz-a": bad.URL, "hz-b": good.URL, "sh": bad.URL} {
		start := strings.Index(nodes, "{id: "+id+",")
		end := start + strings.Index(nodes[start:], "}")
		nodes = nodes[:end] + probe(url) + nodes[end+1:]
	}
	_, cf := fixture(t, nodes, "")

	up := newEngine(t, engine.Config{Corefile: cf})
	if !strings.Contains(strings.Join(up.Notes, "\n"), "probes not run") {
		t.Errorf("Expected a note that probes were not run, got %q", up.Notes)
	}
	if o := decideFor(t, up, "2.0.0.1", "fb.example.org", dns.TypeA); o.Node != "sh" {
		t.Errorf("Expected sh up without probing, got %+v", o)
	}

	e := newEngine(t, engine.Config{Corefile: cf, Probe: true})
	if strings.Contains(strings.Join(e.Notes, "\n"), "probes not run") {
		t.Errorf("Expected no note of unrun probes, got %q", e.Notes)
	}
	for i := range 32 {
		c := "1.0." + strconv.Itoa(i) + ".0/24"
		o := decideFor(t, e, c, "www.example.org", dns.TypeA)
		if o.Node != "hz-b" {
			t.Fatalf("%s: expected hz-b, the Zhejiang node up, got %+v", c, o)
		}
	}
	o := decideFor(t, e, "2.0.0.1", "fb.example.org", dns.TypeA)
	if o.Tier != "fallback" || o.Node != "" || o.Located || o.DistanceKm != -1 {
		t.Errorf("Expected the fallback for a record whose node is down, got %+v", o)
	}
	x := explainFor(t, e, "2.0.0.1", "fb.example.org", dns.TypeA)
	if len(x.Answer) != 1 || x.Answer[0].CNAME != "backup.example.net." || x.Candidates[0].State != "down" {
		t.Errorf("Expected the fallback explained with sh down, got answer %+v candidates %+v", x.Answer, x.Candidates)
	}
}

// TestEngineNotes: without Live the block's Redis and online API are
// dropped and a note says so; the explanation carries the notes.
func TestEngineNotes(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	_, cf := fixture(t, engineNodes, "        online "+api.URL()+"\n")
	e := newEngine(t, engine.Config{Corefile: cf})
	if !strings.Contains(strings.Join(e.Notes, "\n"), "local sources only") {
		t.Fatalf("Expected a note that the online API is not asked, got %q", e.Notes)
	}
	x := explainFor(t, e, "2.0.0.1", "", dns.TypeA)
	for _, n := range e.Notes {
		found := false
		for _, xn := range x.Notes {
			found = found || xn == n
		}
		if !found {
			t.Errorf("Expected the note %q in the explanation's %q", n, x.Notes)
		}
	}
	for _, s := range x.Location.Sources {
		if s.Source == "online" {
			t.Errorf("Expected the online API not asked, got %+v", s)
		}
	}
	if x.Location.Province != "SH" || x.Node != "sh" || api.Calls.Load() != 0 {
		t.Errorf("Expected the local database to place the client, got %+v node %s (%d API calls)", x.Location.ExplainedPlace, x.Node, api.Calls.Load())
	}
}

// TestValidate: the directive's setup for a validating tool loads the
// block and reports what the server's setup would.
func TestValidate(t *testing.T) {
	dir := testsupport.Fixture(t, engineNodes)
	good := caddy.NewTestController("dns", "gslb example.org {\ngeoip "+dir+"/city.mmdb\nnodes "+dir+"/nodes.yaml\n}")
	if err := engine.Validate(good); err != nil {
		t.Errorf("Validate of a good block: %v", err)
	}
	bad := caddy.NewTestController("dns", "gslb example.org {\ngeoip "+dir+"/missing.mmdb\nnodes "+dir+"/nodes.yaml\n}")
	if err := engine.Validate(bad); err == nil || !strings.Contains(err.Error(), "missing.mmdb") {
		t.Errorf("Expected a missing database named, got %v", err)
	}
	typo := caddy.NewTestController("dns", "gslb example.org {\nnodez x\n}")
	if err := engine.Validate(typo); err == nil || !strings.Contains(err.Error(), "nodez") {
		t.Errorf("Expected an unknown option named, got %v", err)
	}
}
