package test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestExplainDrainedAndDown: through a real CoreDNS, a drained node is
// explained as drained and a down one with its probe's failure, by
// /v1/explain and by gslb explain (text and JSON); the start names the
// admin API's token and state file, the Redis address and how many nodes
// are probed, and the node going down is logged with its probe's target
// and failure.
func TestExplainDrainedAndDown(t *testing.T) {
	const zj = "202.101.172.0/24"
	logs := captureLog(t)
	rs := testredis.Start(t)
	dir := t.TempDir()
	closed := testsupport.FreeAddr(t) // nothing listens there
	// hz-telecom, the Zhejiang client's own, is probed where nothing
	// listens; sh-telecom, the next, gets drained.
	nodes := writeFile(t, dir, "nodes.yaml", fmt.Sprintf(`nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16,
     probe: {type: tcp, address: "%s", interval: 1s, timeout: 900ms, fall: 1, rise: 1}}
  - {id: sh-telecom, ipv4: [192.0.2.20], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj-unicom, ipv4: [198.51.100.10], country: CN, province: BJ, isp: unicom, lat: 39.90, lon: 116.41}
records: [{name: www.example.org}]
nameservers: [ns1.example.net]
`, closed))
	e := &adminEnv{dir: dir, addr: testsupport.FreeAddr(t), token: "s3cret-token-for-tests"}
	state := filepath.Join(dir, "state.yaml")
	e.text = gslbCorefile(t, nodes, fmt.Sprintf("admin %s {\n token_file %s\n state %s\n}\nredis %s",
		e.addr, writeToken(t, dir, e.token), state, rs.Addr()))
	conf := writeFile(t, dir, "Corefile", e.text)
	e.s = startServer(t, e.text)

	loaded := logs.line(t, "Loaded ")
	for _, want := range []string{
		"node table " + nodes + ": 3 nodes (1 probed), 1 record",
		"admin API " + e.addr + " (token required, state " + state + ")",
		"redis " + rs.Addr(),
	} {
		if !strings.Contains(loaded, want) {
			t.Errorf("The start line lacks %q:\n%s", want, loaded)
		}
	}
	down := logs.line(t, "node hz-telecom down")
	if want := "node hz-telecom down: tcp probe of " + closed + ": connect: connection refused"; !strings.Contains(down, want) {
		t.Errorf("The probe failure's line %q, want %q", down, want)
	}
	if code, body := e.call(t, "POST", "/v1/nodes/sh-telecom/drain", e.token, ""); code != 200 {
		t.Fatalf("Drain: %d %s", code, body)
	}

	type candidate struct{ ID, Reason, Error string }
	wantWhy := map[string]candidate{
		"hz-telecom": {"hz-telecom", "down", "connect: connection refused"},
		"sh-telecom": {"sh-telecom", "drained", ""},
	}
	checkJSON := func(who, body string) {
		t.Helper()
		var x struct{ Candidates []candidate }
		if err := json.Unmarshal([]byte(body), &x); err != nil {
			t.Fatalf("%s: %v\n%s", who, err, body)
		}
		for _, c := range x.Candidates {
			if w, ok := wantWhy[c.ID]; ok && c != w {
				t.Errorf("%s: %+v, want %+v", who, c, w)
			}
		}
	}
	code, body := e.call(t, "GET", "/v1/explain?addr="+zj+"&name=www.example.org&type=A", e.token, "")
	if code != 200 {
		t.Fatalf("GET /v1/explain: %d %s", code, body)
	}
	checkJSON("/v1/explain", body)

	// The tool probes once (-probe) and reads the drain from the state file.
	out, stderr, code := runTool(t, "explain", "-conf", conf, "-probe", "-json", zj)
	if code != 0 {
		t.Fatalf("gslb explain -json: %d %s", code, stderr)
	}
	checkJSON("gslb explain -json", out)
	out, stderr, code = runTool(t, "explain", "-conf", conf, "-probe", zj)
	if code != 0 {
		t.Fatalf("gslb explain: %d %s", code, stderr)
	}
	for _, want := range []string{"no: down (connect: connection refused)", "no: drained"} {
		if !strings.Contains(out, want) {
			t.Errorf("gslb explain does not say %q:\n%s", want, out)
		}
	}
}
