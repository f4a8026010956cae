package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// The plan the fleet tests execute: Zhejiang and Shanghai out, with an
// enterprise's egress pinned to bj, and a pin made before it removed.
const zjOutPlan = `{"note": "east China is out", "drain": ["hz-a", "sh"],
  "pin": [{"cidr": "2.3.0.0/24", "nodes": ["bj"], "note": "acme egress"}], "unpin": ["5.5.0.0/16"]}`

// planAnswer classifies www's answer (answers 3) for a Zhejiang client:
// "old" has hz-a and sh, "new" neither, "mix" one of them: a state
// holding part of the plan.
func planAnswer(a string) string {
	hz, sh := strings.Contains(a, "192.0.2.1"), strings.Contains(a, "192.0.2.3")
	switch {
	case hz && sh:
		return "old"
	case !hz && !sh:
		return "new"
	}
	return "mix"
}

// mixPoller asks every member for a Zhejiang client's answer, as fast as
// it answers, and keeps what each saw.
type mixPoller struct {
	mu   sync.Mutex
	seen map[string]map[string]int // member, class: count
	bad  []string
	stop chan struct{}
	wg   sync.WaitGroup
}

func startMixPoller(ms []*fleetMember) *mixPoller {
	p := &mixPoller{seen: map[string]map[string]int{}, stop: make(chan struct{})}
	deadline := time.Now().Add(2 * time.Minute) // bounded whatever the test does
	// Every member's map before any poller reads them.
	for _, m := range ms {
		p.seen[m.name] = map[string]int{}
	}
	for _, m := range ms {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for time.Now().Before(deadline) {
				select {
				case <-p.stop:
					return
				default:
				}
				a, err := m.query("www.example.org", "1.3.0.0/24")
				c := planAnswer(a)
				p.mu.Lock()
				switch {
				case err != nil:
					p.seen[m.name]["error"]++
				default:
					p.seen[m.name][c]++
					if c == "mix" {
						p.bad = append(p.bad, m.name+": "+a)
					}
				}
				p.mu.Unlock()
			}
		}()
	}
	return p
}

func (p *mixPoller) saw(member, class string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[member][class]
}

func (p *mixPoller) finish(t *testing.T) {
	t.Helper()
	close(p.stop)
	p.wg.Wait()
	t.Logf("Answers seen: %v", p.seen)
	if len(p.bad) > 0 {
		t.Errorf("Expected no member to answer from part of the plan, got %d: %v", len(p.bad), p.bad[:min(len(p.bad), 5)])
	}
	for m, s := range p.seen {
		if s["error"] > 0 {
			t.Errorf("%s: %d failed queries", m, s["error"])
		}
	}
}

// waitSeen waits until every member's poller saw class.
func (p *mixPoller) waitSeen(t *testing.T, ms []*fleetMember, class string) {
	t.Helper()
	for _, m := range ms {
		if !poll(20*time.Second, func() bool { return p.saw(m.name, class) > 0 }) {
			t.Fatalf("%s: no %q answer within 20s: %v", m.name, class, p.seen[m.name])
		}
	}
}

// adminView is a member's drains and pins (without origins): what a
// rollback must put back exactly.
func adminView(t *testing.T, m *fleetMember) string {
	t.Helper()
	var nodes []struct {
		ID      string
		Drained bool
	}
	if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/nodes", "")), &nodes); err != nil {
		t.Fatal(err)
	}
	var pins []map[string]any
	if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/pins", "")), &pins); err != nil {
		t.Fatal(err)
	}
	for _, p := range pins {
		delete(p, "origin")
	}
	data, _ := json.Marshal(struct {
		Nodes any
		Pins  any
	}{nodes, pins})
	return string(data)
}

// planStatus is the plan's last action on member m: "" when never run,
// "none" when m does not have the plan.
func planStatus(t *testing.T, m *fleetMember, name string) string {
	t.Helper()
	code, out := m.call(t, "GET", "/v1/plans/"+name, "")
	if code == 404 {
		return "none"
	}
	var p struct {
		Last *struct{ Action, By, Member string }
	}
	if code != 200 || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("%s: GET /v1/plans/%s: %d %s", m.name, name, code, out)
	}
	if p.Last == nil {
		return ""
	}
	return p.Last.Action
}

// planFleet starts three members answering with 3 nodes: www's answer
// for a Zhejiang client then shows both of the plan's drains.
func planFleet(t *testing.T) (*fleetEnv, []*fleetMember) {
	e := newFleetEnv(t)
	return e, []*fleetMember{
		e.start(t, "m1", "vantage telecom", "answers 3"),
		e.start(t, "m2", "vantage telecom", "answers 3"),
		e.start(t, "m3", "vantage unicom", "answers 3"),
	}
}

// TestFleetPlanAtomicRollback: a plan executed on m1 reaches every member
// as one change: pollers on all three, asking without pause, see the old
// or the new state of the plan's keys, never a mix. Rolled back from m2,
// every member holds exactly what it held before, and the pollers again
// see no mix. Who asked is logged; a member restarted has the plan.
func TestFleetPlanAtomicRollback(t *testing.T) {
	_, all := planFleet(t)
	m1, m2, m3 := all[0], all[1], all[2]
	m3.must(t, "POST", "/v1/pins", `{"cidr": "5.5.0.0/16", "nodes": ["sh"], "note": "made before the plan"}`)
	within(t, promptly, "the earlier pin everywhere", all, "www.example.org", "5.5.0.0/24", func(a string) bool { return strings.HasPrefix(a, "192.0.2.3") })
	within(t, promptly, "every node in the answer", all, "www.example.org", "1.3.0.0/24", func(a string) bool { return planAnswer(a) == "old" })
	before := adminView(t, m1)
	for _, m := range all[1:] {
		if v := adminView(t, m); v != before {
			t.Fatalf("%s: expected the members to agree before the plan:\n%s\n%s", m.name, before, v)
		}
	}

	m2.must(t, "PUT", "/v1/plans/east-out", zjOutPlan)
	testsupport.WaitFor(t, "the plan stored on every member", func() (bool, string) {
		return planStatus(t, m1, "east-out") == "" && planStatus(t, m3, "east-out") == "", ""
	})
	p := startMixPoller(all)
	p.waitSeen(t, all, "old")
	m1.must(t, "POST", "/v1/plans/east-out/execute", "")
	p.waitSeen(t, all, "new")
	p.finish(t)
	within(t, promptly, "the plan's pin everywhere", all, "www.example.org", "2.3.0.0/24", equal("192.0.2.4"))
	for _, m := range all {
		if s := planStatus(t, m, "east-out"); s != "execute" {
			t.Errorf("%s: expected the plan executed, got %q", m.name, s)
		}
	}

	p = startMixPoller(all)
	p.waitSeen(t, all, "new")
	m2.must(t, "POST", "/v1/plans/east-out/rollback", "")
	p.waitSeen(t, all, "old")
	p.finish(t)
	for _, m := range all {
		testsupport.WaitFor(t, m.name+" holding exactly what it held before the plan", func() (bool, string) {
			v := adminView(t, m)
			return v == before, v + "\nwant\n" + before
		})
	}
	// A member restarted has the plan and its last action, from Redis.
	m3.stop()
	m3.launch(t)
	if s := planStatus(t, m3, "east-out"); s != "rollback" {
		t.Errorf("m3 after a restart: expected the plan rolled back, got %q", s)
	}
	for _, want := range []struct {
		m    *fleetMember
		line string
	}{{m1, "admin: plan east-out executed: drained hz-a,sh; pinned 2.3.0.0/24; unpinned 5.5.0.0/16 (by 127.0.0.1:"},
		{m2, "admin: plan east-out rolled back: drain/hz-a, drain/sh, pin/2.3.0.0/24, pin/5.5.0.0/16 put back as they were (by 127.0.0.1:"}} {
		if !strings.Contains(want.m.out.String(), want.line) {
			t.Errorf("%s: expected the log line %q", want.m.name, want.line)
		}
	}
}

// TestFleetPlanRedisDown: with Redis down, a plan executed on m1 applies
// there at once; m1 restarted meanwhile still has it (its state file);
// once Redis is back (empty) every member has it, and its rollback.
func TestFleetPlanRedisDown(t *testing.T) {
	e, all := planFleet(t)
	m1, m2, m3 := all[0], all[1], all[2]
	m1.must(t, "POST", "/v1/pins", `{"cidr": "5.5.0.0/16", "nodes": ["sh"]}`)
	m1.must(t, "PUT", "/v1/plans/east-out", zjOutPlan)
	testsupport.WaitFor(t, "the plan stored on every member", func() (bool, string) {
		return planStatus(t, m2, "east-out") == "" && planStatus(t, m3, "east-out") == "", ""
	})
	within(t, promptly, "the pin everywhere", all, "www.example.org", "5.5.0.0/24", func(a string) bool { return strings.HasPrefix(a, "192.0.2.3") })

	e.redis.Stop()
	m1.must(t, "POST", "/v1/plans/east-out/execute", "")
	within(t, promptly, "the plan on m1 at once", all[:1], "www.example.org", "1.3.0.0/24", func(a string) bool { return planAnswer(a) == "new" })
	for _, m := range all[1:] {
		if a, err := m.query("www.example.org", "1.3.0.0/24"); err != nil || planAnswer(a) != "old" {
			t.Errorf("%s: expected the old state while Redis is down, got %s %v", m.name, a, err)
		}
	}
	m1.stop()
	m1.launch(t)
	if planAnswer(m1.first) != "new" || planStatus(t, m1, "east-out") != "execute" {
		t.Errorf("m1 restarted with Redis down: expected the plan executed, got %q first, status %q", m1.first, planStatus(t, m1, "east-out"))
	}

	e.redis.Restart()
	within(t, 15*time.Second, "the plan on every member once Redis is back", all, "www.example.org", "1.3.0.0/24", func(a string) bool { return planAnswer(a) == "new" })
	within(t, promptly, "the plan's pin everywhere", all, "www.example.org", "2.3.0.0/24", equal("192.0.2.4"))
	testsupport.WaitFor(t, "the execution on every member", func() (bool, string) {
		s := []string{planStatus(t, m1, "east-out"), planStatus(t, m2, "east-out"), planStatus(t, m3, "east-out")}
		return s[0] == "execute" && s[1] == "execute" && s[2] == "execute", fmt.Sprint(s)
	})
	m3.must(t, "POST", "/v1/plans/east-out/rollback", "")
	within(t, promptly, "the rollback everywhere", all, "www.example.org", "1.3.0.0/24", func(a string) bool { return planAnswer(a) == "old" })
	within(t, promptly, "the earlier pin back everywhere", all, "www.example.org", "5.5.0.0/24", func(a string) bool { return strings.HasPrefix(a, "192.0.2.3") })
}

// TestFleetPlanReadiness: from the decisions m1 made (Zhejiang's clients
// on hz-a at load 0.5, Beijing's on bj at 0.3), draining hz-a would send
// Zhejiang's to sh (0.5, none of the clients): 0.5 + 0.5 × 0.8 = 0.9 for
// a half and half sample (over 0.8 from a share of 0.3 to 0.8), over
// max_load 0.8: 409 with the figures, and nothing changes on any member;
// with force the plan runs everywhere.
func TestFleetPlanReadiness(t *testing.T) {
	e := newFleetEnv(t)
	writeFile(t, e.dir, "nodes.yaml", strings.NewReplacer(
		"lat: 30.27, lon: 120.16}", "lat: 30.27, lon: 120.16, load: 0.5}",
		"lat: 31.23, lon: 121.47}", "lat: 31.23, lon: 121.47, load: 0.5}",
		"lat: 39.90, lon: 116.41}", "lat: 39.90, lon: 116.41, load: 0.3}").Replace(adminNodes))
	m1 := e.start(t, "m1", "vantage telecom", "")
	m2 := e.start(t, "m2", "vantage telecom", "")
	m3 := e.start(t, "m3", "vantage unicom", "")
	all := []*fleetMember{m1, m2, m3}
	for i := range 400 {
		ecs := fmt.Sprintf("1.%d.%d.0/24", 10+i/256, i%256)
		if i%2 == 1 {
			ecs = "2" + ecs[1:]
		}
		if _, err := m1.query("www.example.org", ecs); err != nil {
			t.Fatalf("Query %d: %v", i, err)
		}
	}
	m1.must(t, "PUT", "/v1/plans/hz-out", `{"drain": ["hz-a"]}`)
	code, out := m1.call(t, "POST", "/v1/plans/hz-out/execute", "")
	if code != 409 {
		t.Fatalf("Expected 409, got %d %s", code, out)
	}
	var refusal struct {
		Error     string
		Readiness struct {
			Samples int
			MaxLoad float64 `json:"max_load"`
			Over    []string
			Nodes   []struct {
				Node        string
				Share       float64
				NewShare    float64 `json:"new_share"`
				Load        float64
				Projected   float64 `json:"projected_load"`
				OverMaxLoad bool    `json:"over_max_load"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &refusal); err != nil {
		t.Fatalf("Expected JSON figures, got %s: %v", out, err)
	}
	r := refusal.Readiness
	t.Logf("Refusal: %s", out)
	// 400 decisions, one in 8 kept at random: 50 ± 7.
	if !strings.Contains(refusal.Error, "nodes sh would pass max_load 0.8") || r.Samples < 25 || r.Samples > 75 || r.MaxLoad != 0.8 || len(r.Over) != 1 || r.Over[0] != "sh" {
		t.Errorf("Expected about 50 samples and sh over 0.8, got %s", out)
	}
	for _, f := range r.Nodes {
		if f.Node == "sh" && (f.Share != 0 || f.NewShare < 0.25 || f.NewShare > 0.75 || f.Projected < 0.8 || !f.OverMaxLoad) {
			t.Errorf("Expected sh from none to about half the clients, near 0.9, got %+v", f)
		}
	}
	for _, m := range all {
		if a, err := m.query("www.example.org", "1.3.0.0/24"); err != nil || a != "192.0.2.1" {
			t.Errorf("%s: expected nothing changed by the refusal, got %s %v", m.name, a, err)
		}
	}
	m1.must(t, "POST", "/v1/plans/hz-out/execute?force=1", "")
	within(t, promptly, "the forced plan everywhere", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	if !strings.Contains(m1.out.String(), "forced past the readiness estimate (over: sh)") {
		t.Errorf("Expected m1 to log the forced execution")
	}
}
