package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	golog "log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/plan"
	"github.com/gslbdns/gslb/runstate"

	"github.com/miekg/dns"
)

// planControl starts a block of the fixture's nodes (with nodes, when
// given) with an admin API and a state file in dir.
func planControl(t *testing.T, dir, extra string) *Control {
	t.Helper()
	state := filepath.Join(dir, "state.yaml")
	c := newTestControl(t, dir, "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\ncooldown 0s\nadmin 127.0.0.1:0 {\n state "+state+"\n}\n"+extra+"}")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func apiCall(t *testing.T, c *Control, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+c.admin.Addr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func apiMust(t *testing.T, c *Control, method, path, body string) string {
	t.Helper()
	code, out := apiCall(t, c, method, path, body)
	if code != 200 {
		t.Fatalf("%s %s: %d %s", method, path, code, out)
	}
	return out
}

// adminKeys is the admin state's keys but the plans: what a plan changes.
func adminKeys(c *Control) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.entries() {
		if !strings.HasPrefix(k, plan.KeyPrefix) {
			out[k] = string(v)
		}
	}
	return out
}

// TestPlanExecuteRollback: a plan drains two nodes, undrains one, pins a
// network and removes a pin, all in one change; its rollback puts back
// exactly what each key held, drain times included.
func TestPlanExecuteRollback(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	c := planControl(t, dir, "")
	apiMust(t, c, "POST", "/v1/nodes/sh/drain", "")
	apiMust(t, c, "POST", "/v1/pins", `{"cidr": "3.0.0.0/8", "nodes": ["bj"], "note": "kept"}`)
	before := adminKeys(c)
	if got := answerOf(t, c, "www.example.org", "1.0.1.0/24"); got != "192.0.2.1" && got != "192.0.2.2" {
		t.Fatalf("Expected a Zhejiang node for 1.0.1.0/24 before, got %s", got)
	}
	body := `{"note": "Zhejiang is out", "drain": ["hz-a", "hz-b"], "undrain": ["sh"], "pin": [{"cidr": "2.0.0.0/24", "nodes": ["bj"]}], "unpin": ["3.0.0.0/8"]}`
	apiMust(t, c, "PUT", "/v1/plans/zj-out", body)
	if got := adminKeys(c); !maps.Equal(got, before) {
		t.Fatalf("Expected storing a plan to change nothing else, got %v", got)
	}
	out := apiMust(t, c, "POST", "/v1/plans/zj-out/execute", "")
	var s plan.Stored
	if err := json.Unmarshal([]byte(out), &s); err != nil || !s.Executed() || s.Last.By == "" {
		t.Fatalf("Expected the executed plan, got %s (%v)", out, err)
	}
	after := adminKeys(c)
	for _, k := range []string{"drain/hz-a", "drain/hz-b", "pin/2.0.0.0/24"} {
		if _, ok := after[k]; !ok {
			t.Errorf("Expected %s after the execution, got %v", k, after)
		}
	}
	for _, k := range []string{"drain/sh", "pin/3.0.0.0/8"} {
		if _, ok := after[k]; ok {
			t.Errorf("Expected no %s after the execution", k)
		}
	}
	if got := answerOf(t, c, "www.example.org", "1.0.1.0/24"); got != "192.0.2.3" {
		t.Errorf("Expected sh for Zhejiang once hz-a and hz-b are drained and sh is back, got %s", got)
	}
	if got := answerOf(t, c, "www.example.org", "2.0.0.0/24"); got != "192.0.2.4" {
		t.Errorf("Expected the plan's pin to send 2.0.0.0/24 to bj, got %s", got)
	}
	// The state file has it, the plan included.
	st, err := admin.LoadState(filepath.Join(dir, "state.yaml"), 0, nil)
	if err != nil || len(st.Drains) != 2 || len(st.Plans) != 1 || !st.Plans[0].Executed() {
		t.Fatalf("Expected the state file with two drains and the executed plan, got %+v %v", st, err)
	}
	if code, out := apiCall(t, c, "POST", "/v1/plans/zj-out/execute", ""); code != 409 || !strings.Contains(out, "executed already") {
		t.Errorf("Expected 409 executing twice, got %d %s", code, out)
	}
	apiMust(t, c, "POST", "/v1/plans/zj-out/rollback", "")
	if got := adminKeys(c); !maps.Equal(got, before) {
		t.Errorf("Expected the rollback to put back exactly\n%v\ngot\n%v", before, got)
	}
	if got := answerOf(t, c, "www.example.org", "1.0.1.0/24"); got != "192.0.2.1" && got != "192.0.2.2" {
		t.Errorf("Expected a Zhejiang node again after the rollback, got %s", got)
	}
	var list []plan.Stored
	if err := json.Unmarshal([]byte(apiMust(t, c, "GET", "/v1/plans", "")), &list); err != nil || len(list) != 1 || list[0].Last.Action != plan.ActionRollback {
		t.Errorf("Expected the plan listed with its rollback, got %+v %v", list, err)
	}
	if code, out := apiCall(t, c, "POST", "/v1/plans/zj-out/rollback", ""); code != 409 {
		t.Errorf("Expected 409 rolling back a plan not executed, got %d %s", code, out)
	}
	// A later load of the state file (a restart) has the plan.
	c.Stop()
	c2 := planControl(t, dir, "")
	var got planView
	if err := json.Unmarshal([]byte(apiMust(t, c2, "GET", "/v1/plans/zj-out", "")), &got); err != nil || got.Note != "Zhejiang is out" || got.Last == nil {
		t.Errorf("Expected the plan after a restart, got %+v %v", got, err)
	}
}

// TestPlanErrors: bad bodies name the field; unknown plans are 404; an
// executed plan is not changed or deleted without force.
func TestPlanErrors(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	c := planControl(t, dir, "")
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"PUT", "/v1/plans/p", `{"drain": ["hz-x"]}`, 400, `drain[0]: node \"hz-x\" is not in the node table (did you mean \"hz-a\"?)`},
		{"PUT", "/v1/plans/p", `{"drian": ["hz-a"]}`, 400, `unknown field \"drian\"`},
		{"PUT", "/v1/plans/p", `{"canary_percent": 5}`, 400, "canary_percent: no canary line"},
		{"PUT", "/v1/plans/p", `{"pin": [{"cidr": "2.0.0.0/24", "location": {"country": "CN", "isp": "telecon"}}]}`, 200, ""},
		{"POST", "/v1/plans/p/execute", "", 400, "location.isp"},
		{"PUT", "/v1/plans/bad%20name", `{"drain": ["hz-a"]}`, 400, "is not 1 to 64"},
		{"PUT", "/v1/plans/p", strings.Repeat(" ", plan.MaxBody+1), 400, "body:"},
		{"GET", "/v1/plans/none", "", 404, "not found"},
		{"POST", "/v1/plans/none/execute", "", 404, "not found"},
		{"POST", "/v1/plans/p/rollback", "", 409, "not executed"},
		{"PUT", "/v1/plans/q", `{"drain": ["hz-a"]}`, 200, ""},
		{"POST", "/v1/plans/q/execute", `{"force": "yes"}`, 400, "body:"},
		{"POST", "/v1/plans/q/execute?force=maybe", "", 400, "force:"},
		{"POST", "/v1/plans/q/execute", "", 200, ""},
		{"PUT", "/v1/plans/q", `{"drain": ["hz-b"]}`, 409, "roll it back before changing it"},
		{"DELETE", "/v1/plans/q", "", 409, "roll it back first"},
		{"DELETE", "/v1/plans/q?force=1", "", 200, ""},
		{"GET", "/v1/plans/q", "", 404, ""},
	} {
		code, out := apiCall(t, c, tc.method, tc.path, tc.body)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s %s %.40s: expected %d with %q, got %d %s", tc.method, tc.path, tc.body, tc.code, tc.want, code, out)
		}
	}
}

// loadedNodes are the fixture's nodes with loads: hz-a and hz-b at 0.5,
// sh at 0.6, bj at 0.1.
var loadedNodes = strings.NewReplacer(
	"lat: 30.27, lon: 120.16}", "lat: 30.27, lon: 120.16, load: 0.5}",
	"lat: 31.23, lon: 121.47}", "lat: 31.23, lon: 121.47, load: 0.6}",
	"lat: 39.9, lon: 116.4}", "lat: 39.9, lon: 116.4, load: 0.1}",
).Replace(testsupport.FixtureNodes)

// decideMany decides and notes n queries from the /24s of prefix.
func decideMany(t *testing.T, c *Control, prefix string, n int) {
	t.Helper()
	for i := range n {
		cl, err := decide.ParseClient(fmt.Sprintf(prefix, i%256))
		if err != nil {
			t.Fatal(err)
		}
		var out decide.Outcome
		if err := c.Decider().For(context.Background(), cl, "www.example.org", dns.TypeA, &out); err != nil {
			t.Fatal(err)
		}
		c.NoteDecision(&out, time.Now())
	}
}

// TestPlanReadiness: with Zhejiang's and Shanghai's clients half and
// half, draining both Zhejiang nodes sends theirs to sh: 0.6 × 2 = 1.2,
// over max_load 0.8: 409 with the figures; force executes it, and says so.
func TestPlanReadiness(t *testing.T) {
	dir := testsupport.Fixture(t, loadedNodes)
	c := planControl(t, dir, "")
	logs := &testsupport.LogBuffer{}
	golog.SetOutput(logs)
	t.Cleanup(clog.Discard)
	// Enough that the sample's split of the two halves cannot put sh over
	// max_load with the pin below (200 samples did, about once in 50 runs).
	decideMany(t, c, "1.0.%d.0/24", 3200)
	decideMany(t, c, "2.0.0.%d/32", 3200)
	apiMust(t, c, "PUT", "/v1/plans/zj-out", `{"drain": ["hz-a", "hz-b"]}`)
	var v planView
	if err := json.Unmarshal([]byte(apiMust(t, c, "GET", "/v1/plans/zj-out", "")), &v); err != nil || v.Readiness == nil || v.Readiness.Ready {
		t.Fatalf("Expected GET to show the plan not ready, got %+v %v", v.Readiness, err)
	}
	code, out := apiCall(t, c, "POST", "/v1/plans/zj-out/execute", "")
	if code != 409 {
		t.Fatalf("Expected 409, got %d %s", code, out)
	}
	var refusal planConflict
	if err := json.Unmarshal([]byte(out), &refusal); err != nil || refusal.Readiness == nil {
		t.Fatalf("Expected the figures in the refusal, got %s (%v)", out, err)
	}
	r := refusal.Readiness
	// 6,400 decisions, one in 8 kept at random: 800 ± 27.
	if r.Samples < 650 || r.Samples > 950 || len(r.Over) != 1 || r.Over[0] != "sh" || r.MaxLoad != 0.8 {
		t.Errorf("Expected about 800 samples and sh over 0.8, got %+v", r)
	}
	for _, f := range r.Nodes {
		if f.Node == "sh" && (f.Share < 0.35 || f.Share > 0.65 || f.NewShare != 1 || f.Projected < 0.9) {
			t.Errorf("Expected sh from about half to all of the clients, near 1.2, got %+v", f)
		}
	}
	if got := adminKeys(c); len(got) != 0 {
		t.Errorf("Expected nothing changed by a refused execution, got %v", got)
	}
	// With Shanghai's clients pinned to bj, sh keeps its load and bj, which
	// had none of the clients, takes them: the pin is estimated too.
	apiMust(t, c, "PUT", "/v1/plans/zj-out-pinned", `{"drain": ["hz-a", "hz-b"], "pin": [{"cidr": "2.0.0.0/24", "nodes": ["bj"]}]}`)
	if err := json.Unmarshal([]byte(apiMust(t, c, "GET", "/v1/plans/zj-out-pinned", "")), &v); err != nil || v.Readiness == nil || strings.Join(v.Readiness.Over, ",") != "bj" {
		t.Errorf("Expected bj over max_load with the pin, got %+v %v", v.Readiness, err)
	}
	out = apiMust(t, c, "POST", "/v1/plans/zj-out/execute", `{"force": true}`)
	if !strings.Contains(out, `"forced": true`) {
		t.Errorf("Expected the execution marked forced, got %s", out)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "plan zj-out executed") {
			line = l
		}
	}
	if !strings.Contains(line, "forced past the readiness estimate (over: sh)") || !strings.Contains(line, "by 127.0.0.1:") {
		t.Errorf("Expected the log to say who forced it, got %s", line)
	}
}

// TestPlanStateFileErrors: a plan in the state file that does not check
// names its line.
func TestPlanStateFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.yaml")
	data := "{\n  \"plans\": [\n    {\"name\": \"a\", \"drain\": [\"x\"]},\n    {\"name\": \"b\", \"drain\": [\"x\", \"x\"]}\n  ]\n}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := admin.LoadState(path, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "line 4: plans[1]: drain[1]") {
		t.Errorf("Expected the error to name line 4, plans[1], drain[1], got %v", err)
	}
}

// TestPlanCanaryShare: a plan's canary share applies with its other
// changes, and its rollback returns to the Corefile's share (no key); the
// drain of a node only the candidate has is kept throughout.
func TestPlanCanaryShare(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	candidate := strings.Replace(testsupport.FixtureNodes, "records:", "  - {id: gz, ipv4: [192.0.2.9], country: CN, province: GD, isp: telecom, lat: 23.1, lon: 113.3}\nrecords:", 1)
	if err := os.WriteFile(filepath.Join(dir, "candidate.yaml"), []byte(candidate), 0o644); err != nil {
		t.Fatal(err)
	}
	c := planControl(t, dir, "canary candidate.yaml 10\n")
	apiMust(t, c, "POST", "/v1/nodes/gz/drain", "")
	before := adminKeys(c)
	if _, ok := before["drain/gz"]; !ok {
		t.Fatalf("Expected the candidate's node drained, got %v", before)
	}
	apiMust(t, c, "PUT", "/v1/plans/half", `{"canary_percent": 50, "drain": ["bj"]}`)
	apiMust(t, c, "POST", "/v1/plans/half/execute", "")
	var cn admin.Canary
	if err := json.Unmarshal([]byte(apiMust(t, c, "GET", "/v1/canary", "")), &cn); err != nil || cn.Percent != 50 {
		t.Errorf("Expected the canary at 50%%, got %+v %v", cn, err)
	}
	if got := adminKeys(c); got[runstate.CanaryKey] == "" || got["drain/gz"] != before["drain/gz"] {
		t.Errorf("Expected the canary key and gz's drain after the execution, got %v", got)
	}
	apiMust(t, c, "POST", "/v1/plans/half/rollback", "")
	if err := json.Unmarshal([]byte(apiMust(t, c, "GET", "/v1/canary", "")), &cn); err != nil || cn.Percent != 10 {
		t.Errorf("Expected the canary back at the Corefile's 10%%, got %+v %v", cn, err)
	}
	if got := adminKeys(c); !maps.Equal(got, before) {
		t.Errorf("Expected exactly %v after the rollback, got %v", before, got)
	}
}

// BenchmarkNoteDecision is what the readiness sample adds to a query.
func BenchmarkNoteDecision(b *testing.B) {
	dir := testsupport.Fixture(b, testsupport.FixtureNodes)
	c := newTestControl(b, dir, fmt.Sprintf(fixtureBlock, ""))
	cl, _ := decide.ParseClient("1.0.1.0/24")
	var out decide.Outcome
	if err := c.Decider().For(context.Background(), cl, "www.example.org", dns.TypeA, &out); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.NoteDecision(&out, now)
		}
	})
}
