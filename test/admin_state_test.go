package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// startAdminState is startAdmin with the state file holding state first.
func startAdminState(t *testing.T, nodes, state, extra string) *adminEnv {
	t.Helper()
	e := &adminEnv{dir: t.TempDir(), addr: testsupport.FreeAddr(t), token: "s3cret-token-for-tests"}
	city, asn := adminDBs(t, e.dir)
	nf := writeFile(t, e.dir, "nodes.yaml", nodes)
	tokenFile := writeToken(t, e.dir, e.token)
	if state != "" {
		writeFile(t, e.dir, "state.yaml", state)
	}
	e.text = corefile(city, asn, nf, fmt.Sprintf("admin %s {\n token_file %s\n state %s\n}\n%s",
		e.addr, tokenFile, filepath.Join(e.dir, "state.yaml"), extra))
	e.s = startServer(t, e.text)
	return e
}

// TestAdminPinNoteSurvivesRestart: a note with a leading blank and a
// newline (which the YAML writer once saved as an unreadable block) reads
// back as it was after a restart, and the drains beside it too.
func TestAdminPinNoteSurvivesRestart(t *testing.T) {
	e := startAdmin(t, "")
	note := " ticket 4711\nmoved by oncall"
	city := "  #杭州: \t\"x\"\n"
	body, _ := json.Marshal(map[string]any{"cidr": "2.0.1.0/24", "nodes": []string{"sh"}, "note": note,
		"location": map[string]string{"country": "CN", "province": "ZJ", "city": city}})
	if code, body := e.call(t, "POST", "/v1/pins", e.token, string(body)); code != 200 {
		t.Fatalf("POST /v1/pins: %d %s", code, body)
	}
	if code, body := e.call(t, "POST", "/v1/nodes/hz-a/drain", e.token, ""); code != 200 {
		t.Fatalf("drain: %d %s", code, body)
	}
	e.s.stop()
	e.s = startServer(t, e.text)
	code, got := e.call(t, "GET", "/v1/pins", e.token, "")
	var pins []struct {
		Note     string
		Location struct{ City string }
	}
	if err := json.Unmarshal([]byte(got), &pins); code != 200 || err != nil || len(pins) != 1 {
		t.Fatalf("GET /v1/pins after a restart: %d %v %s", code, err, got)
	}
	if pins[0].Note != note || pins[0].Location.City != city {
		t.Errorf("Expected note %q and city %q back, got %q and %q", note, city, pins[0].Note, pins[0].Location.City)
	}
	if !e.nodes(t)["hz-a"].Drained {
		t.Errorf("Expected the drain beside the pin restored")
	}
}

// TestAdminBadStateFile: a state file that does not load never stops
// gslb. It serves without it, logs the file and line, shows 0 in
// coredns_gslb_admin_state_ok and refuses changes, so that nothing
// overwrites the file, until the file is fixed or removed.
func TestAdminBadStateFile(t *testing.T) {
	logs := captureLog(t)
	bad := "drains:\n  - node: hz-a\n    since: 2026-01-01T00:00:00Z\n  - node: sh\n    since: yesterday\n"
	e := startAdminState(t, adminNodes, bad, "")
	path := filepath.Join(e.dir, "state.yaml")
	if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.1" {
		t.Errorf("Expected gslb to serve without the state file (hz-a), got %s", got)
	}
	line := logs.line(t, "serving without it")
	if !strings.Contains(line, "[ERROR]") || !strings.Contains(line, path) || !strings.Contains(line, "line 5") {
		t.Errorf("Expected an error naming the file and the line, got %s", line)
	}
	if v := gaugeValue(t, "coredns_gslb_admin_state_ok", "file", path); v != 0 {
		t.Errorf("Expected coredns_gslb_admin_state_ok 0, got %v", v)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/nodes/sh/drain", ""},
		{"POST", "/v1/pins", `{"cidr": "2.0.1.0/24", "nodes": ["sh"]}`},
	} {
		if code, body := e.call(t, c.method, c.path, e.token, c.body); code != 503 || !strings.Contains(body, path) || !strings.Contains(body, "fixed or removed") {
			t.Errorf("%s %s: expected 503 naming the file, got %d %s", c.method, c.path, code, body)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != bad {
		t.Errorf("Expected the bad file untouched, got\n%s", data)
	}
	if code, _ := e.call(t, "GET", "/v1/nodes", e.token, ""); code != 200 {
		t.Errorf("Expected reads to work, got %d", code)
	}
	// A Corefile reload keeps the refusal.
	e.s.restart(t, e.text+"\n")
	if code, _ := e.call(t, "POST", "/v1/nodes/sh/drain", e.token, ""); code != 503 {
		t.Errorf("Expected 503 after a reload, got %d", code)
	}

	// Fixed: the next change takes the file's state up, then changes it.
	writeFile(t, e.dir, "state.yaml", "drains:\n  - node: hz-a\n    since: 2026-01-01T00:00:00Z\n")
	if code, body := e.call(t, "POST", "/v1/nodes/bj/drain", e.token, ""); code != 200 {
		t.Fatalf("Expected the change taken once the file is fixed, got %d %s", code, body)
	}
	n := e.nodes(t)
	if !n["hz-a"].Drained || !n["bj"].Drained || n["sh"].Drained {
		t.Errorf("Expected hz-a (from the file) and bj drained, got %+v", n)
	}
	if v := gaugeValue(t, "coredns_gslb_admin_state_ok", "file", path); v != 1 {
		t.Errorf("Expected coredns_gslb_admin_state_ok 1, got %v", v)
	}

	// Removed: a fresh state.
	e.s.stop()
	writeFile(t, e.dir, "state.yaml", "pins: [\n")
	e.s = startServer(t, e.text)
	os.Remove(path)
	if code, body := e.call(t, "POST", "/v1/nodes/sh/drain", e.token, ""); code != 200 {
		t.Fatalf("Expected the change taken once the file is removed, got %d %s", code, body)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"sh"`) {
		t.Errorf("Expected a new state file with the drain: %v\n%s", err, data)
	}
}

// eightNodes: eight equal Zhejiang nodes.
func eightNodes() string {
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "  - {id: n%d, ipv4: [192.0.2.%d], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n", i, i)
	}
	b.WriteString("records:\n  - name: www.example.org\n")
	return b.String()
}

// TestAdminDrainDuringReload: drains acknowledged while a Corefile reload
// runs are all in GET /v1/nodes, in the state file and in the answers of
// the instance that serves next; no answer after an acknowledgement goes
// to the drained node.
func TestAdminDrainDuringReload(t *testing.T) {
	e := startAdminState(t, eightNodes(), "", "")
	udp := e.s.udp
	drained := func(id string) string { return "192.0.2." + strings.TrimPrefix(id, "n") }
	for round := range 8 {
		for i := 1; i <= 8; i++ {
			e.call(t, "POST", fmt.Sprintf("/v1/nodes/n%d/undrain", i), e.token, "")
		}
		var wg sync.WaitGroup
		wg.Go(func() { e.s.restart(t, e.text+strings.Repeat("\n", round+1)) })
		var acked []string
		var bad []string
		for i := 1; i <= 6; i++ {
			id := fmt.Sprintf("n%d", i)
			if code, body := e.call(t, "POST", "/v1/nodes/"+id+"/drain", e.token, ""); code != 200 {
				t.Fatalf("round %d: drain %s: %d %s", round, id, code, body)
			}
			acked = append(acked, drained(id))
			for k := range 8 {
				r := exchange(t, "udp", udp, newQuery(t, "www.example.org.", dns.TypeA, fmt.Sprintf("1.0.%d.0/24", 8*i+k)))
				if a := answerOf(r); slices.Contains(acked, a) {
					bad = append(bad, fmt.Sprintf("%s after %s acked", a, id))
				}
			}
			time.Sleep(3 * time.Millisecond) // the pace: drains 3 ms apart
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Errorf("round %d: answers to drained nodes: %v", round, bad)
		}
		n := e.nodes(t)
		data, _ := os.ReadFile(filepath.Join(e.dir, "state.yaml"))
		for i := 1; i <= 6; i++ {
			id := fmt.Sprintf("n%d", i)
			if !n[id].Drained {
				t.Errorf("round %d: %s acked but not drained in /v1/nodes", round, id)
			}
			if !strings.Contains(string(data), fmt.Sprintf(`"node":%q`, id)) {
				t.Errorf("round %d: %s acked but not in the state file", round, id)
			}
		}
		for k := range 32 {
			if a := answerOf(ask(t, e.s, "www.example.org.", dns.TypeA, fmt.Sprintf("1.0.%d.0/24", 100+k))); slices.Contains(acked, a) {
				t.Errorf("round %d: answer %s is a drained node", round, a)
			}
		}
	}
}

// writeToken writes a token file only its owner can read.
func writeToken(t *testing.T, dir, token string) string {
	t.Helper()
	p := writeFile(t, dir, "token", token+"\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// callHeaders is call with extra request headers.
func (e *adminEnv) callHeaders(t *testing.T, method, path, token string, h map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+e.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestAdminTokenEverywhere: with a token, every endpoint needs it, and the
// Host and Origin checks hold: a DNS-rebinding page reads nothing. The 401
// log line is rate-limited.
func TestAdminTokenEverywhere(t *testing.T) {
	logs := captureLog(t)
	e := startAdmin(t, "")
	if code, _ := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "2.0.1.0/24", "nodes": ["sh"], "note": "secret note"}`); code != 200 {
		t.Fatalf("POST /v1/pins: %d", code)
	}
	for _, p := range []string{"/v1/nodes", "/v1/pins", "/v1/canary", "/v1/explain?addr=1.0.1.0/24&name=www.example.org"} {
		if code, body := e.call(t, "GET", p, "", ""); code != 401 || strings.Contains(body, "secret") {
			t.Errorf("GET %s without the token: expected 401, got %d %s", p, code, body)
		}
	}
	if code, body := e.callHeaders(t, "GET", "/v1/pins", e.token, map[string]string{"Host": "evil.example"}); code != 403 || strings.Contains(body, "secret") {
		t.Errorf("Expected 403 for Host evil.example, got %d %s", code, body)
	}
	if code, _ := e.callHeaders(t, "GET", "/v1/pins", "", map[string]string{"Host": "evil.example:" + strings.Split(e.addr, ":")[1]}); code != 403 {
		t.Errorf("Expected 403 for Host evil.example without a token, got %d", code)
	}
	if code, _ := e.callHeaders(t, "POST", "/v1/nodes/sh/drain", e.token, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}); code != 403 {
		t.Errorf("Expected 403 for a cross-site POST, got %d", code)
	}
	if e.nodes(t)["sh"].Drained {
		t.Errorf("A refused request drained sh")
	}
	if code, _ := e.callHeaders(t, "GET", "/v1/pins", e.token, map[string]string{"Host": "localhost"}); code != 200 {
		t.Errorf("Expected 200 for Host localhost with the token, got %d", code)
	}
	for range 200 {
		e.call(t, "GET", "/v1/nodes", "wrong", "")
	}
	if n := strings.Count(logs.String(), "admin: unauthorized"); n < 1 || n > 2 {
		t.Errorf("Expected one or two lines for 200+ unauthorized requests, got %d", n)
	}
}

// TestAdminMappedPrefix: an IPv4-mapped network shorter than /96 is
// refused, not stored as 0.0.0.0/0 over an existing /0 pin.
func TestAdminMappedPrefix(t *testing.T) {
	e := startAdmin(t, "")
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "0.0.0.0/0", "nodes": ["bj"]}`); code != 200 {
		t.Fatalf("POST /v1/pins 0.0.0.0/0: %d %s", code, body)
	}
	for _, cidr := range []string{"::ffff:0.0.0.0/1", "::ffff:0.0.0.0/95"} {
		if code, body := e.call(t, "POST", "/v1/pins", e.token, fmt.Sprintf(`{"cidr": %q, "nodes": ["sh"]}`, cidr)); code != 400 || !strings.Contains(body, "/96") {
			t.Errorf("POST %s: expected 400 naming /96, got %d %s", cidr, code, body)
		}
	}
	if got := e.answer(t, "www.example.org", "1.0.1.0/24"); got != "192.0.2.4" {
		t.Errorf("Expected the /0 pin to bj kept, got %s", got)
	}
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "::ffff:1.0.0.0/104", "nodes": ["sh"]}`); code != 200 || !strings.Contains(body, `"1.0.0.0/8"`) {
		t.Errorf("Expected ::ffff:1.0.0.0/104 stored as 1.0.0.0/8, got %d %s", code, body)
	}
}

// TestAdminTokenFile: a token file others can read, a token a client
// cannot send, or a weak one stops the start with a clear error.
func TestAdminTokenFile(t *testing.T) {
	dir := t.TempDir()
	city, asn := adminDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", adminNodes)
	for _, tc := range []struct {
		token string
		mode  os.FileMode
		want  string
	}{
		{"9f86d081884c7d659a2feaa0c55ad015", 0o644, "readable by others than its owner (mode 0644): chmod 600"},
		{"9f86d081884c7d659a2feaa0c55ad015", 0o640, "mode 0640"},
		{"9f86d081884c7d65\x009a2feaa0c55ad015", 0o600, `'\x00' at byte 16`},
		{"9f86d081884c7d65 9a2feaa0c55ad015", 0o600, "without blanks"},
		{"0123456789abcdef", 0o600, "too weak"},
		{strings.Repeat("ab", 40), 0o600, "too weak"},
		{"", 0o600, "empty"},
	} {
		p := filepath.Join(dir, "token")
		os.Remove(p)
		if err := os.WriteFile(p, []byte(tc.token+"\n"), tc.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, tc.mode)
		mu.Lock()
		inst, err := caddy.Start(input(corefile(city, asn, nodes, "admin "+testsupport.FreeAddr(t)+" {\n token_file "+p+"\n}")))
		mu.Unlock()
		if err == nil {
			inst.ShutdownCallbacks()
			inst.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "token_file") {
			t.Errorf("token %q mode %04o: expected the start to fail with %q, got %v", tc.token, tc.mode, tc.want, err)
		}
	}
}

// TestSpecialRangePins: pins and overrides of private and loopback
// networks apply (a resolver's own address in a private network), and
// explain says why.
func TestSpecialRangePins(t *testing.T) {
	dir := t.TempDir()
	ov := writeFile(t, dir, "overrides.yaml", "overrides:\n  - cidr: 192.168.0.0/16\n    nodes: [sh]\n")
	e := startAdmin(t, "overrides "+ov)
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "10.0.0.0/8", "nodes": ["bj"]}`); code != 200 {
		t.Fatalf("POST /v1/pins 10.0.0.0/8: %d %s", code, body)
	}
	if got := e.answer(t, "www.example.org", "10.1.2.0/24"); got != "192.0.2.4" {
		t.Errorf("Expected the 10.0.0.0/8 pin to bj applied, got %s", got)
	}
	if got := e.answer(t, "www.example.org", "192.168.7.0/24"); got != "192.0.2.3" {
		t.Errorf("Expected the 192.168.0.0/16 override to sh applied, got %s", got)
	}
	// The test's own resolver address, 127.0.0.1, without ECS.
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "127.0.0.0/8", "location": {"country": "CN", "province": "SH"}}`); code != 200 {
		t.Fatalf("POST /v1/pins 127.0.0.0/8: %d %s", code, body)
	}
	if got := e.answer(t, "www.example.org", ""); got != "192.0.2.3" {
		t.Errorf("Expected the resolver at 127.0.0.1 placed in Shanghai, got %s", got)
	}
	code, body := e.call(t, "GET", "/v1/explain?addr=10.1.2.3&name=www.example.org", e.token, "")
	if code != 200 || !strings.Contains(body, `"node": "bj"`) || !strings.Contains(body, "override") {
		t.Errorf("Expected explain to show the pin to bj, got %d %s", code, body)
	}
}

// TestAdminStateSizeLimit: a change that would make the state file larger
// than max_file_size is refused (507, with the reason) before it is
// acknowledged, so that every acknowledged change loads at the next start.
func TestAdminStateSizeLimit(t *testing.T) {
	e := startAdmin(t, "max_file_size 1KiB")
	refused := 0
	for i := range 20 {
		body := fmt.Sprintf(`{"cidr": "2.0.%d.0/24", "nodes": ["sh"], "note": "ticket %d"}`, i, i)
		code, got := e.call(t, "POST", "/v1/pins", e.token, body)
		switch code {
		case 200:
			if refused > 0 {
				t.Fatalf("pin %d: 200 after a refusal", i)
			}
		case http.StatusInsufficientStorage:
			if !strings.Contains(got, "max_file_size") {
				t.Errorf("Expected the 507 to name max_file_size, got %s", got)
			}
			refused++
		default:
			t.Fatalf("pin %d: %d %s", i, code, got)
		}
	}
	if refused == 0 {
		t.Fatalf("Expected the pins to outgrow 1KiB and be refused")
	}
	fi, err := os.Stat(filepath.Join(e.dir, "state.yaml"))
	if err != nil || fi.Size() > 1024 {
		t.Fatalf("Expected the state file within 1KiB, got %v %v", fi, err)
	}
	_, before := e.call(t, "GET", "/v1/pins", e.token, "")
	e.s.stop()
	e.s = startServer(t, e.text)
	if _, after := e.call(t, "GET", "/v1/pins", e.token, ""); after != before {
		t.Errorf("Expected every acknowledged pin back after a restart:\n%s\ngot\n%s", before, after)
	}
	if code, got := e.call(t, "DELETE", "/v1/pins/2.0.0.0/24", e.token, ""); code != 200 {
		t.Errorf("Expected changes taken after the restart, got %d %s", code, got)
	}
}

// TestAdminSaveFailureLogged: a change whose save fails (the state
// directory was removed) answers 500, is not made, and is logged at Error,
// once for a burst.
func TestAdminSaveFailureLogged(t *testing.T) {
	logs := captureLog(t)
	e := &adminEnv{dir: t.TempDir(), addr: testsupport.FreeAddr(t), token: "s3cret-token-for-tests"}
	city, asn := adminDBs(t, e.dir)
	nodes := writeFile(t, e.dir, "nodes.yaml", adminNodes)
	stateDir := filepath.Join(e.dir, "state")
	if err := os.Mkdir(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.text = corefile(city, asn, nodes, fmt.Sprintf("admin %s {\n token_file %s\n state %s\n}",
		e.addr, writeToken(t, e.dir, e.token), filepath.Join(stateDir, "state.yaml")))
	e.s = startServer(t, e.text)
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if code, body := e.call(t, "POST", "/v1/nodes/hz-a/drain", e.token, ""); code != 500 || !strings.Contains(body, stateDir) {
			t.Fatalf("Expected 500 naming the state file, got %d %s", code, body)
		}
	}
	if e.nodes(t)["hz-a"].Drained {
		t.Errorf("Expected the drain not made")
	}
	line := logs.line(t, "[ERROR] plugin/gslb: admin: the change is not made: admin state "+stateDir)
	if n := strings.Count(logs.String(), "the change is not made"); n != 1 {
		t.Errorf("Expected one Error line for the burst, got %d: %s", n, line)
	}
}
