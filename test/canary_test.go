package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// canaryNodes sends www's Zhejiang clients to Beijing: the candidate's
// answers are told apart from stable's.
const canaryNodes = `nodes:
  - {id: hz-a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj, ipv4: [192.0.2.4], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.41}
records:
  - name: www.example.org
    nodes: [bj]
  - name: img.example.org
    nodes: [hz-a, bj]
`

// zjSubnets are n distinct Zhejiang /24s.
func zjSubnets(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("1.%d.%d.0/24", i/256, i%256)
	}
	return out
}

// inCanary asks for every subnet and reports which got the candidate's
// answer (Beijing for a Zhejiang client).
func inCanary(t *testing.T, e *adminEnv, subnets []string) map[string]bool {
	t.Helper()
	m := make(map[string]bool, len(subnets))
	for _, s := range subnets {
		switch got := e.answer(t, "www.example.org", s); got {
		case "192.0.2.4":
			m[s] = true
		case "192.0.2.1":
			m[s] = false
		default:
			t.Fatalf("%s: unexpected answer %s", s, got)
		}
	}
	return m
}

func share(m map[string]bool) float64 {
	n := 0
	for _, in := range m {
		if in {
			n++
		}
	}
	return float64(n) / float64(len(m))
}

// TestCanaryShare: 20% of 5,000 distinct /24s get the candidate table,
// each /24 keeps its policy across queries, and raising the share to 50%
// through the admin API only adds /24s.
func TestCanaryShare(t *testing.T) {
	captureLog(t)
	dir := t.TempDir()
	cand := writeFile(t, dir, "candidate.yaml", canaryNodes)
	e := startAdmin(t, "canary "+cand+" 20")
	subnets := zjSubnets(5000)
	before := counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary")
	first := inCanary(t, e, subnets)
	if f := share(first); f < 0.17 || f > 0.23 {
		t.Fatalf("Expected 20%% ± 3%% of the /24s in the canary, got %.1f%%", 100*f)
	}
	again := inCanary(t, e, subnets)
	for s, in := range first {
		if again[s] != in {
			t.Fatalf("%s changed policy between two queries", s)
		}
	}
	n := 0
	for _, in := range first {
		if in {
			n++
		}
	}
	if v := counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary") - before; v != float64(2*n) {
		t.Errorf("Expected the canary's %d decisions (twice) counted, got %v", n, v)
	}
	// The metadata says which policy decided.
	var canarySubnet, stableSubnet string
	for s, in := range first {
		if in && canarySubnet == "" {
			canarySubnet = s
		}
		if !in && stableSubnet == "" {
			stableSubnet = s
		}
	}
	logs := captureLog(t) // a fresh buffer: query ids repeat over thousands of queries
	for s, want := range map[string]string{canarySubnet: "canary", stableSubnet: "stable"} {
		_, l := queryLabels(t, e.s, logs, newQuery(t, "www.example.org", dns.TypeA, s))
		if l["gslb/policy"] != want {
			t.Errorf("%s: expected gslb/policy %s, got %v", s, want, l)
		}
	}
	// The scope never covers subnets of the other policy: the database's
	// network is a /8, the answer holds for the /24.
	for _, sn := range []string{canarySubnet, stableSubnet} {
		if ecs := replyECS(ask(t, e.s, "www.example.org", dns.TypeA, sn)); ecs == nil || ecs.SourceScope != 24 {
			t.Errorf("%s: expected scope /24 with a canary, got %v", sn, ecs)
		}
	}
	// img is the same in both tables: the canary's /24s get its answer too.
	if got := e.answer(t, "img.example.org", canarySubnet); got != "192.0.2.1" {
		t.Errorf("Expected img's own answer for a canary subnet, got %s", got)
	}

	if code, _ := e.call(t, "POST", "/v1/canary", "", `{"percent": 50}`); code != 401 {
		t.Errorf("Expected 401 without the token, got %d", code)
	}
	for _, bad := range []string{`{"percent": 150}`, `{"percent": -1}`, `{}`, `{"share": 5}`} {
		if code, body := e.call(t, "POST", "/v1/canary", e.token, bad); code != 400 {
			t.Errorf("POST /v1/canary %s: expected 400, got %d %s", bad, code, body)
		}
	}
	code, body := e.call(t, "POST", "/v1/canary", e.token, `{"percent": 50}`)
	if code != 200 || !strings.Contains(body, `"percent": 50`) {
		t.Fatalf("Expected 200 at 50%%, got %d %s", code, body)
	}
	half := inCanary(t, e, subnets)
	if f := share(half); f < 0.47 || f > 0.53 {
		t.Errorf("Expected 50%% ± 3%% at 50, got %.1f%%", 100*f)
	}
	for s, in := range first {
		if in && !half[s] {
			t.Fatalf("%s left the canary when the share rose", s)
		}
	}
	// The API's share is in the state file, and survives a reload.
	e.s.restart(t, e.text+"\n")
	if f := share(inCanary(t, e, subnets[:1000])); f < 0.44 || f > 0.56 {
		t.Errorf("Expected the API's 50%% after a reload, got %.1f%%", 100*f)
	}
}

// TestCanaryRollback: a candidate that sends everyone to a far province
// rolls back once its cross-province ratio is worse than stable's by more
// than rollback_cross; a new candidate file clears the rollback.
func TestCanaryRollback(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	// The same nodes, all placed in Xinjiang.
	bad := `nodes:
  - {id: hz-a, ipv4: [192.0.2.1], country: CN, province: XJ, isp: telecom, lat: 43.8, lon: 87.6}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: XJ, isp: telecom, lat: 43.8, lon: 87.6}
  - {id: bj, ipv4: [192.0.2.4], country: CN, province: XJ, isp: telecom, lat: 43.8, lon: 87.6}
records:
  - name: www.example.org
    nodes: [bj]
  - name: img.example.org
    nodes: [hz-a, bj]
`
	cand := writeFile(t, dir, "candidate.yaml", bad)
	e := startAdmin(t, "reload 1s\ncanary "+cand+" 30 {\n rollback_cross 0.2\n rollback_min 200\n}")
	subnets := zjSubnets(2000)
	for _, s := range subnets {
		e.answer(t, "www.example.org", s)
	}
	if v := gaugeValue(t, "coredns_gslb_canary_rolled_back", "", ""); v != 1 {
		t.Fatalf("Expected coredns_gslb_canary_rolled_back 1, got %v", v)
	}
	if f := share(inCanary(t, e, subnets[:500])); f != 0 {
		t.Errorf("Expected no /24 in the canary after the rollback, got %.1f%%", 100*f)
	}
	_, body := e.call(t, "GET", "/v1/canary", e.token, "")
	var st struct {
		Percent    float64
		RolledBack bool `json:"rolled_back"`
		Reason     string
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || !st.RolledBack || st.Percent != 0 || !strings.Contains(st.Reason, "rollback_cross 0.2") {
		t.Errorf("Expected the canary rolled back with its reason, got %s", body)
	}
	if !strings.Contains(logs.String(), "rolled back to 0%") {
		t.Errorf("Expected the rollback logged")
	}
	// The rollback is in the state file: a restart keeps it.
	waitFor(t, "the rollback in the state file", func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(e.dir, "state.yaml"))
		return strings.Contains(string(data), `"rolled_back":true`), string(data)
	})
	e.s.stop()
	e.s = startServer(t, e.text)
	if f := share(inCanary(t, e, subnets[:500])); f != 0 {
		t.Errorf("Expected the canary still rolled back after a restart, got %.1f%%", 100*f)
	}

	// A new candidate: Zhejiang stays home, the rollback is cleared.
	writeFile(t, dir, "candidate.yaml", strings.Replace(canaryNodes, "nodes: [bj]\n", "nodes: [hz-a, bj]\n", 1))
	waitFor(t, "the new candidate", func() (bool, string) {
		v := gaugeValue(t, "coredns_gslb_canary_rolled_back", "", "")
		return v == 0, fmt.Sprint(v)
	})
	_, body = e.call(t, "GET", "/v1/canary", e.token, "")
	if !strings.Contains(body, `"percent": 30`) || !strings.Contains(body, `"rolled_back": false`) {
		t.Errorf("Expected the canary back at 30%%, got %s", body)
	}
}

// counterSum adds a counter's series that have label=value.
func counterSum(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestAdminCandidateOnlyNode: a node only the canary's candidate has is
// listed (with the tables that have it), drained and pinned through the
// API, and its drain survives a restart.
func TestAdminCandidateOnlyNode(t *testing.T) {
	cand := writeFile(t, t.TempDir(), "candidate.yaml", `nodes:
  - {id: hz-a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: nj-telecom, ipv4: [192.0.2.99], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
records:
  - name: www.example.org
    nodes: [nj-telecom, sh]
`)
	e := startAdmin(t, "canary "+cand+" 100")
	const zj = "1.0.1.0/24"
	if got := e.answer(t, "www.example.org", zj); got != "192.0.2.99" {
		t.Fatalf("Expected the candidate's nj-telecom, got %s", got)
	}
	nodes := e.nodes(t)
	code, body := e.call(t, "GET", "/v1/nodes", e.token, "")
	if n, ok := nodes["nj-telecom"]; !ok || strings.Join(n.Tables, ",") != "canary" {
		t.Errorf("Expected nj-telecom listed in the canary table only, got %d %s", code, body)
	}
	if n := nodes["hz-a"]; strings.Join(n.Tables, ",") != "stable,canary" {
		t.Errorf("Expected hz-a in both tables, got %v", n.Tables)
	}
	if n := nodes["bj"]; strings.Join(n.Tables, ",") != "stable" {
		t.Errorf("Expected bj in the stable table only, got %v", n.Tables)
	}
	if code, body := e.call(t, "POST", "/v1/nodes/nj-telecom/drain", e.token, ""); code != 200 || !strings.Contains(body, `"drained": true`) {
		t.Fatalf("drain nj-telecom: %d %s", code, body)
	}
	if got := e.answer(t, "www.example.org", zj); got != "192.0.2.3" {
		t.Errorf("Expected sh once nj-telecom is drained, got %s", got)
	}
	if code, body := e.call(t, "POST", "/v1/pins", e.token, `{"cidr": "2.0.1.0/24", "nodes": ["nj-telecom"]}`); code != 200 {
		t.Errorf("pin to nj-telecom: %d %s", code, body)
	}
	e.s.stop()
	e.s = startServer(t, e.text)
	if !e.nodes(t)["nj-telecom"].Drained {
		t.Errorf("Expected nj-telecom's drain restored after a restart")
	}
	if _, body := e.call(t, "GET", "/v1/pins", e.token, ""); !strings.Contains(body, "nj-telecom") {
		t.Errorf("Expected the pin to nj-telecom restored after a restart, got %s", body)
	}
	if code, body := e.call(t, "POST", "/v1/nodes/nj-telecom/undrain", e.token, ""); code != 200 {
		t.Fatalf("undrain nj-telecom: %d %s", code, body)
	}
}
