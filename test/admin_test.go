package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// adminNodes: two equal Zhejiang telecom nodes, one in Shanghai, one in
// Beijing.
const adminNodes = `nodes:
  - {id: hz-a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj, ipv4: [192.0.2.4], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.41}
records:
  - name: www.example.org
  - name: img.example.org
    nodes: [hz-a, bj]
`

// adminDBs: 1.0.0.0/8 is Zhejiang and 2.0.0.0/8 Beijing, China Telecom.
func adminDBs(t *testing.T, dir string) (city, asn string) {
	return testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
		{Network: "2.0.0.0/8", Country: "CN", Province: "BJ", Lat: 39.9, Lon: 116.4, Radius: 50},
	}, []mmdbgen.ASN{
		{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"},
		{Network: "2.0.0.0/8", ASN: 4134, Org: "Chinanet"},
	})
}

type adminEnv struct {
	dir, addr, token string
	text             string
	s                *server
}

// startAdmin serves adminNodes with an admin block (a token and a state
// file) and the extra gslb lines.
func startAdmin(t *testing.T, extra string) *adminEnv {
	t.Helper()
	return startAdminOn(t, adminDBs, extra)
}

// startAdminOn is startAdmin with the databases dbs writes.
func startAdminOn(t *testing.T, dbs func(*testing.T, string) (string, string), extra string) *adminEnv {
	t.Helper()
	e := &adminEnv{dir: t.TempDir(), addr: testsupport.FreeAddr(t), token: "s3cret-token-for-tests"}
	city, asn := dbs(t, e.dir)
	nodes := writeFile(t, e.dir, "nodes.yaml", adminNodes)
	tokenFile := writeToken(t, e.dir, e.token)
	e.text = corefile(city, asn, nodes, fmt.Sprintf("admin %s {\n token_file %s\n state %s\n}\n%s",
		e.addr, tokenFile, filepath.Join(e.dir, "state.yaml"), extra))
	e.s = startServer(t, e.text)
	return e
}

// call makes an admin API request; token "" sends none.
func (e *adminEnv) call(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+e.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func (e *adminEnv) answer(t *testing.T, name, ecs string) string {
	t.Helper()
	return answerOf(ask(t, e.s, name, dns.TypeA, ecs))
}

type apiNode struct {
	ID      string
	State   string
	Reason  string
	Load    float64
	Drained bool
	Since   *time.Time
	Records []string
	Tables  []string
}

func (e *adminEnv) nodes(t *testing.T) map[string]apiNode {
	t.Helper()
	code, body := e.call(t, "GET", "/v1/nodes", e.token, "")
	var ns []apiNode
	if err := json.Unmarshal([]byte(body), &ns); code != 200 || err != nil {
		t.Fatalf("GET /v1/nodes: %d %v %s", code, err, body)
	}
	m := map[string]apiNode{}
	for _, n := range ns {
		m[n.ID] = n
	}
	return m
}

// TestAdminDrain: drain moves the answers, needs the token, shows in
// /v1/nodes, the metric and the metadata; undrain brings them back over
// the cooldown.
func TestAdminDrain(t *testing.T) {
	logs := captureLog(t)
	// A cooldown long beside the 100 queries that look at its start, on a
	// loaded machine too.
	e := startAdmin(t, "cooldown 10s")
	const zj = "1.0.1.0/24"
	if got := e.answer(t, "www.example.org", zj); got != "192.0.2.1" {
		t.Fatalf("Expected hz-a before the drain, got %s", got)
	}

	// No token, a wrong one: 401, and nothing changes.
	for _, tok := range []string{"", "wrong"} {
		if code, body := e.call(t, "POST", "/v1/nodes/hz-a/drain", tok, ""); code != 401 || !strings.Contains(body, "bearer token") {
			t.Errorf("Expected 401 with token %q, got %d %s", tok, code, body)
		}
	}
	if got := e.answer(t, "www.example.org", zj); got != "192.0.2.1" || e.nodes(t)["hz-a"].Drained {
		t.Fatalf("An unauthorized drain changed something: %s, %+v", got, e.nodes(t)["hz-a"])
	}

	code, body := e.call(t, "POST", "/v1/nodes/hz-a/drain", e.token, "")
	var n apiNode
	if err := json.Unmarshal([]byte(body), &n); code != 200 || err != nil || !n.Drained || n.ID != "hz-a" || n.Since == nil {
		t.Fatalf("Expected 200 with hz-a drained, got %d %s", code, body)
	}
	// The very next answer moves, for every Zhejiang /24.
	for i := range 50 {
		if got := e.answer(t, "www.example.org", fmt.Sprintf("1.0.%d.0/24", i)); got != "192.0.2.3" {
			t.Fatalf("Expected Shanghai while hz-a is drained, got %s", got)
		}
	}
	nodes := e.nodes(t)
	if a := nodes["hz-a"]; !a.Drained || a.State != "unprobed" || strings.Join(a.Records, ",") != "www.example.org.,img.example.org." {
		t.Errorf("Expected hz-a drained, still unprobed, serving both records, got %+v", a)
	}
	if b := nodes["sh"]; b.Drained || strings.Join(b.Records, ",") != "www.example.org." {
		t.Errorf("Expected sh serving www only, got %+v", b)
	}
	if v := gaugeValue(t, "coredns_gslb_node_drained", "node", "hz-a"); v != 1 {
		t.Errorf("Expected coredns_gslb_node_drained{node=hz-a} 1, got %v", v)
	}
	// img has hz-a and bj: with hz-a drained Zhejiang goes to Beijing.
	if got := e.answer(t, "img.example.org", zj); got != "192.0.2.4" {
		t.Errorf("Expected Beijing for img, got %s", got)
	}
	if !strings.Contains(logs.String(), "admin: node hz-a drained (by 127.0.0.1:") || strings.Contains(logs.String(), e.token) {
		t.Errorf("Expected the drain logged at Info, without the token:\n%s", logs.String())
	}
	if code, _ := e.call(t, "POST", "/v1/nodes/nope/drain", e.token, ""); code != 404 {
		t.Errorf("Expected 404 for an unknown node, got %d", code)
	}

	// Undrain: the clients come back over the cooldown, not at once.
	if code, body := e.call(t, "POST", "/v1/nodes/hz-a/undrain", e.token, ""); code != 200 || !strings.Contains(body, `"drained": false`) {
		t.Fatalf("Expected 200 with hz-a undrained, got %d %s", code, body)
	}
	back := func() int {
		n := 0
		for i := range 100 {
			if e.answer(t, "www.example.org", fmt.Sprintf("1.0.%d.0/24", i)) == "192.0.2.1" {
				n++
			}
		}
		return n
	}
	if n := back(); n > 50 {
		t.Errorf("Expected most subnets still away right after the undrain (a ramp), got %d of 100 back", n)
	}
	waitFor(t, "every subnet back on hz-a", func() (bool, string) {
		n := back()
		return n == 100, fmt.Sprintf("%d of 100 back", n)
	})
	if v := gaugeValue(t, "coredns_gslb_node_drained", "node", "hz-a"); v != 0 {
		t.Errorf("Expected coredns_gslb_node_drained{node=hz-a} 0, got %v", v)
	}
}

// TestAdminDrainedState: with every node of a record drained, the answer
// fails open and the metadata says drained.
func TestAdminDrainedState(t *testing.T) {
	logs := captureLog(t)
	e := startAdmin(t, "")
	for _, id := range []string{"hz-a", "bj"} {
		if code, body := e.call(t, "POST", "/v1/nodes/"+id+"/drain", e.token, ""); code != 200 {
			t.Fatalf("drain %s: %d %s", id, code, body)
		}
	}
	_, l := queryLabels(t, e.s, logs, newQuery(t, "img.example.org", dns.TypeA, "1.0.1.0/24"))
	if l["gslb/tier"] != "fail_open" || l["gslb/node_state"] != "drained" {
		t.Errorf("Expected fail_open with node_state drained, got %v", l)
	}
}

// TestAdminPins: a pin overrides the ladder, takes precedence over the
// overrides file, expires, and is deleted; bad bodies get 400.
func TestAdminPins(t *testing.T) {
	dir := t.TempDir()
	ov := writeFile(t, dir, "overrides.yaml", "overrides:\n  - {cidr: 1.0.1.0/24, nodes: [bj]}\n")
	e := startAdmin(t, "overrides "+ov)
	if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.4" {
		t.Fatalf("Expected the overrides file's pin (bj), got %s", got)
	}
	if code, _ := e.call(t, "POST", "/v1/pins", "", `{"cidr": "1.0.1.0/24", "nodes": ["sh"]}`); code != 401 {
		t.Errorf("Expected 401 without the token, got %d", code)
	}

	code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "1.0.1.0/24", "nodes": ["sh"], "ttl": "1s"}`)
	if code != 200 || !strings.Contains(body, `"cidr": "1.0.1.0/24"`) || !strings.Contains(body, `"expires"`) {
		t.Fatalf("Expected 200 with the pin, got %d %s", code, body)
	}
	r := ask(t, e.s, "www.example.org", dns.TypeA, "1.0.1.0/24")
	if got := answerOf(r); got != "192.0.2.3" {
		t.Errorf("Expected the API's pin (sh) over the file's, got %s", got)
	}
	if ecs := replyECS(r); ecs == nil || ecs.SourceScope < 24 {
		t.Errorf("Expected a scope of at least the pin's /24, got %v", ecs)
	}
	if got := e.answer(t, "www.example.org", "1.0.2.0/24"); got != "192.0.2.1" {
		t.Errorf("Expected the ladder outside the pin, got %s", got)
	}
	// A location pin.
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "1.0.9.0/24", "location": {"country": "CN", "province": "BJ", "isp": "telecom"}}`); code != 200 {
		t.Fatalf("location pin: %d %s", code, body)
	}
	if got := e.answer(t, "www.example.org", "1.0.9.0/24"); got != "192.0.2.4" {
		t.Errorf("Expected a client pinned to Beijing to get bj, got %s", got)
	}
	// The 1s pin expires: the file's pin is back.
	waitFor(t, "the pin to expire", func() (bool, string) {
		got := e.answer(t, "www.example.org", "1.0.1.0/24")
		return got == "192.0.2.4", got
	})
	_, body = e.call(t, "GET", "/v1/pins", e.token, "")
	if strings.Contains(body, "1.0.1.0/24") || !strings.Contains(body, "1.0.9.0/24") {
		t.Errorf("Expected only the location pin listed, got %s", body)
	}
	if code, _ := e.call(t, "DELETE", "/v1/pins/1.0.9.0/24", e.token, ""); code != 200 {
		t.Errorf("Expected 200 deleting the pin, got %d", code)
	}
	if got := e.answer(t, "www.example.org", "1.0.9.0/24"); got != "192.0.2.1" {
		t.Errorf("Expected the ladder once the pin is deleted, got %s", got)
	}
	if code, _ := e.call(t, "DELETE", "/v1/pins/1.0.9.0/24", e.token, ""); code != 404 {
		t.Errorf("Expected 404 deleting it again, got %d", code)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"cidr": "1.0.1.0/24", "nodes": ["nope"]}`, `unknown node \"nope\"`},
		{`{"cidr": "1.0.1.1/24", "nodes": ["sh"]}`, "cidr"},
		{`{"cidr": "1.0.1.0/24"}`, "location/nodes"},
		{`{"cidr": "1.0.1.0/24", "nodes": ["sh"], "ttl": "soon"}`, "ttl"},
		{`{"cidr": "1.0.1.0/24", "nodes": ["sh"], "color": "red"}`, `unknown field \"color\"`},
		{`not json`, "body"},
		{`{"cidr": "1.0.1.0/24", "location": {"country": "CN", "province": "Atlantis"}}`, "province"},
		{`{"cidr": "1.0.1.0/24", "location": {"province": "BJ", "isp": "telecom"}}`, "location.country: missing; country is required"},
	} {
		code, body := e.call(t, "POST", "/v1/pins", e.token, tc.body)
		if code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("POST %s: expected 400 mentioning %q, got %d %s", tc.body, tc.want, code, body)
		}
	}
	if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.4" {
		t.Errorf("Expected bad requests to change nothing, got %s", got)
	}
}

// TestAdminState: drains and pins survive a Corefile reload and a restart
// from the state file. A broken state file no longer stops the start (see
// TestAdminBadStateFile): gslb serves without it.
func TestAdminState(t *testing.T) {
	e := startAdmin(t, "")
	e.call(t, "POST", "/v1/nodes/hz-a/drain", e.token, "")
	e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "2.0.1.0/24", "nodes": ["sh"], "note": "ticket 42"}`)
	check := func(when string) {
		t.Helper()
		if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.3" {
			t.Errorf("%s: expected hz-a still drained, got %s", when, got)
		}
		if got := e.answer(t, "www.example.org", "2.0.1.0/24"); got != "192.0.2.3" {
			t.Errorf("%s: expected the pin still there, got %s", when, got)
		}
		if !e.nodes(t)["hz-a"].Drained {
			t.Errorf("%s: /v1/nodes lost the drain", when)
		}
	}
	check("before")
	data, err := os.ReadFile(filepath.Join(e.dir, "state.yaml"))
	if err != nil || !strings.Contains(string(data), `"node":"hz-a"`) || !strings.Contains(string(data), `"note":"ticket 42"`) {
		t.Fatalf("Expected the state file to hold the drain and the pin: %v\n%s", err, data)
	}

	// A Corefile reload, as the reload plugin does it: same admin address.
	e.s.restart(t, e.text+"\n")
	check("after a reload")

	// A restart: a new process reads the state file.
	e.s.stop()
	e.s = startServer(t, e.text)
	check("after a restart")

	e.s.stop()

	// A node that left the table while drained: its drain is dropped, with
	// a warning, and the server starts.
	logs := captureLog(t)
	writeFile(t, e.dir, "state.yaml", "drains:\n  - node: hz-a\n    since: 2026-01-01T00:00:00Z\n  - node: ghost\n    since: 2026-01-01T00:00:00Z\n")
	e.s = startServer(t, e.text)
	if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.3" {
		t.Errorf("Expected hz-a still drained, got %s", got)
	}
	if !strings.Contains(logs.String(), "line 4: drains[1]: node ghost is not in the node table: its drain is dropped") {
		t.Errorf("Expected a warning about ghost, got\n%s", logs.String())
	}
}

// TestAdminSetup: a non-loopback address needs a token file; two blocks
// cannot share an address; GET /v1/explain is gslb explain.
func TestAdminSetup(t *testing.T) {
	dir := t.TempDir()
	city, asn := adminDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", adminNodes)
	for _, tc := range []struct{ corefile, want string }{
		{corefile(city, asn, nodes, "admin 0.0.0.0:9154"), "not a loopback address: token_file is required"},
		{corefile(city, asn, nodes, "admin 127.0.0.1:9154 {\n token_file "+filepath.Join(dir, "missing")+"\n}"), "token_file"},
		{corefile(city, asn, nodes, "admin 127.0.0.1:9154") + "\n" + strings.Replace(corefile(city, asn, nodes, "admin 127.0.0.1:9154"), "example.org:0", "example.net:0", 1),
			"127.0.0.1:9154 is already the admin address of the gslb block at line"},
	} {
		mu.Lock()
		inst, err := caddy.Start(input(tc.corefile))
		mu.Unlock()
		if err == nil {
			inst.ShutdownCallbacks()
			inst.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expected the start to fail with %q, got %v", tc.want, err)
		}
	}

	// Loopback without a token: open.
	addr := testsupport.FreeAddr(t)
	s := startServer(t, corefile(city, asn, nodes, "admin "+addr))
	e := &adminEnv{addr: addr, s: s}
	code, body := e.call(t, "GET", "/v1/explain?addr=1.0.1.0/24&name=www.example.org&type=A", "", "")
	var x map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &x); code != 200 || err != nil {
		t.Fatalf("GET /v1/explain: %d %v %s", code, err, body)
	}
	for _, k := range []string{"client", "location", "tiers", "candidates", "node", "answer", "ttl", "scope"} {
		if _, ok := x[k]; !ok {
			t.Errorf("Expected key %q in /v1/explain, got %s", k, body)
		}
	}
	if string(x["node"]) != `"hz-a"` {
		t.Errorf("Expected hz-a explained, got %s", x["node"])
	}
	if code, body := e.call(t, "GET", "/v1/explain?addr=banana", "", ""); code != 400 || !strings.Contains(body, "addr") {
		t.Errorf("Expected 400 for a bad address, got %d %s", code, body)
	}
	if code, _ := e.call(t, "POST", "/v1/nodes/sh/drain", "", ""); code != 200 {
		t.Errorf("Expected a loopback admin without a token to accept changes, got %d", code)
	}
	if code, _ := e.call(t, "GET", "/v1/canary", "", ""); code != 404 {
		t.Errorf("Expected 404 for the canary without a canary line, got %d", code)
	}
}

// TestAdminSameStateFile: two gslb blocks cannot share a state file or an
// admin address under different spellings: a path through "..", a
// symbolic or hard link, localhost for 127.0.0.1, a wildcard address.
func TestAdminSameStateFile(t *testing.T) {
	dir := t.TempDir()
	city, asn := adminDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", adminNodes)
	state := writeFile(t, dir, "state.shared", "{}\n")
	if err := os.Symlink(state, filepath.Join(dir, "link.shared")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(state, filepath.Join(dir, "hard.shared")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	two := func(a, b string) string {
		return corefile(city, asn, nodes, a) + "\n" + strings.Replace(corefile(city, asn, nodes, b), "example.org:0", "example.net:0", 1)
	}
	withState := func(addr, path string) string { return "admin " + addr + " {\n state " + path + "\n}" }
	a1, a2 := testsupport.FreeAddr(t), testsupport.FreeAddr(t)
	_, port, _ := net.SplitHostPort(a1)
	for _, tc := range []struct{ corefile, want string }{
		{two(withState(a1, state), withState(a2, filepath.Join(dir, "sub", "..", "state.shared"))), "is already the state file of the gslb block at line"},
		{two(withState(a1, state), withState(a2, filepath.Join(dir, "link.shared"))), "is already the state file of the gslb block at line"},
		{two(withState(a1, state), withState(a2, filepath.Join(dir, "hard.shared"))), "is already the state file of the gslb block at line"},
		{two(withState(a1, filepath.Join(dir, "new.yaml")), withState(a2, filepath.Join(dir, "sub", "..", "new.yaml"))), "is already the state file of the gslb block at line"},
		{two("admin "+a1, "admin localhost:"+port), "is already the admin address of the gslb block at line"},
		{two("admin [::1]:"+port, "admin [0:0:0:0:0:0:0:1]:"+port), "is already the admin address of the gslb block at line"},
		{two("admin "+a1, "admin [::]:"+port+" {\n token_file "+writeToken(t, dir, "s3cret-token-for-tests")+"\n}"), "is already the admin address of the gslb block at line"},
	} {
		mu.Lock()
		inst, err := caddy.Start(input(tc.corefile))
		mu.Unlock()
		if err == nil {
			inst.ShutdownCallbacks()
			inst.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expected the start to fail with %q, got %v", tc.want, err)
		}
	}
}

// TestAdminUndrainLog: the undrain line says how the clients come back:
// over the cooldown, or at once with cooldown 0.
func TestAdminUndrainLog(t *testing.T) {
	for cooldown, want := range map[string]string{
		"0s":  "admin: node sh undrained: its clients come back at once (cooldown 0) (by ",
		"90s": "admin: node sh undrained: its clients come back over the cooldown (1m30s) (by ",
	} {
		logs := captureLog(t)
		e := startAdmin(t, "cooldown "+cooldown)
		for _, verb := range []string{"drain", "undrain"} {
			if code, body := e.call(t, "POST", "/v1/nodes/sh/"+verb, e.token, ""); code != 200 {
				t.Fatalf("%s: %d %s", verb, code, body)
			}
		}
		logs.line(t, want)
		e.s.stop()
	}
}
