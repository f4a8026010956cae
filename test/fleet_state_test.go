package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// newRedisProxy stands between one member and Redis: Cut makes Redis out
// of reach for that member alone (a partition), Restore brings it back.
func newRedisProxy(t *testing.T, target string) *testredis.Proxy {
	return testredis.NewProxy(t, target)
}

// poll reports whether cond holds within limit, polling: for what takes
// longer than testsupport.WaitFor's bound by design (isolation comes after
// three probe intervals).
func poll(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(testsupport.PollEvery) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// originOf is the origin of node id's drain key as member m shows it.
func originOf(t *testing.T, m *fleetMember, id string) string {
	n := m.node(t, id)
	if n.Origin == nil {
		return "none"
	}
	return n.Origin.Member + "@" + n.Origin.Time.Format(time.RFC3339Nano)
}

// TestFleetDrainRace: an undrain on m1 and a drain on m2 20 ms later: the
// drain is the later change and ends on every member, also when m2 still
// saw the node drained when it took it: once with m2 cut off from Redis
// meanwhile, then ten times in a row.
func TestFleetDrainRace(t *testing.T) {
	e := newFleetEnv(t)
	px := newRedisProxy(t, e.redis.Addr())
	m1 := e.start(t, "m1", "vantage telecom", "")
	m2 := e.startVia(t, "m2", px.Addr(), "vantage telecom", "")
	m3 := e.start(t, "m3", "vantage unicom", "")
	all := []*fleetMember{m1, m2, m3}
	m1.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, 5*time.Second, "hz-a drained", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))

	// The race made certain: m2, cut off, cannot have seen m1's undrain
	// when it takes the drain.
	px.Cut()
	m1.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
	time.Sleep(20 * time.Millisecond)
	m2.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	px.Restore()
	within(t, 10*time.Second, "m2's later drain after the partition", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	testsupport.WaitFor(t, "hz-a drained on every member after the partition", func() (bool, string) {
		o := []string{originOf(t, m1, "hz-a"), originOf(t, m2, "hz-a"), originOf(t, m3, "hz-a")}
		return o[0] == o[1] && o[1] == o[2] && strings.Contains(o[0], ":"+portOf(m2.dns)+"@"), strings.Join(o, " ")
	})

	m1.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, 5*time.Second, "hz-a drained", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	drainedEverywhere := 0
	for round := range 10 {
		var before string
		testsupport.WaitFor(t, "the members agreeing on hz-a", func() (bool, string) {
			o := []string{originOf(t, m1, "hz-a"), originOf(t, m2, "hz-a"), originOf(t, m3, "hz-a")}
			before = o[0]
			return o[0] == o[1] && o[1] == o[2], strings.Join(o, " ")
		})
		m1.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
		time.Sleep(20 * time.Millisecond) // the gap between the two operators is the scenario
		m2.must(t, "POST", "/v1/nodes/hz-a/drain", "")
		// Settled: every member has the same last change, a new one.
		testsupport.WaitFor(t, "the members settling", func() (bool, string) {
			o := []string{originOf(t, m1, "hz-a"), originOf(t, m2, "hz-a"), originOf(t, m3, "hz-a")}
			return o[0] == o[1] && o[1] == o[2] && o[0] != before, strings.Join(o, " ")
		})
		ok := 0
		for _, m := range all {
			deadline := time.Now().Add(2 * time.Second)
			for {
				a, err := m.query("www.example.org", "1.3.0.0/24")
				if m.node(t, "hz-a").Drained && err == nil && a != "192.0.2.1" {
					ok++
					break
				}
				if time.Now().After(deadline) {
					t.Logf("Round %d: %s ends with hz-a undrained (answer %s %v)", round, m.name, a, err)
					break
				}
				time.Sleep(testsupport.PollEvery)
			}
		}
		if ok == len(all) {
			drainedEverywhere++
		}
	}
	if drainedEverywhere != 10 {
		t.Errorf("Expected the later drain to hold on every member in 10 of 10 rounds, got %d", drainedEverywhere)
	}
}

// TestFleetCutOffChangeSurvivesRestart: an undrain made on m1 while it is
// cut off from Redis is kept over m1's restart (still cut off), and, the
// later change, wins on every member once m1 reaches Redis again. While
// m1 is isolated its fleet_members gauge counts itself alone.
func TestFleetCutOffChangeSurvivesRestart(t *testing.T) {
	e := newFleetEnv(t)
	px := newRedisProxy(t, e.redis.Addr())
	m1 := e.startVia(t, "m1", px.Addr(), "vantage telecom", "")
	m2 := e.start(t, "m2", "vantage telecom", "")
	m3 := e.start(t, "m3", "vantage unicom", "")
	all := []*fleetMember{m1, m2, m3}
	m2.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, 5*time.Second, "m2's drain everywhere", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	testsupport.WaitFor(t, "m1 counting 3 members", func() (bool, string) {
		v, _ := m1.metric(t, "coredns_gslb_fleet_members")
		return v == 3, fmt.Sprint(v)
	})

	px.Cut()
	m1.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
	within(t, 5*time.Second, "the undrain on m1", []*fleetMember{m1}, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	m1.stop()
	m1.launch(t)
	if m1.first != "192.0.2.1" {
		t.Errorf("m1 restarted while cut off: expected its undrain kept (192.0.2.1), got %q first", m1.first)
	}
	for _, m := range []*fleetMember{m2, m3} {
		if a, err := m.query("www.example.org", "1.3.0.0/24"); err != nil || a == "192.0.2.1" {
			t.Errorf("%s: expected the drain to hold while m1 is cut off, got %s %v", m.name, a, err)
		}
	}
	if !poll(40*time.Second, func() bool { v, _ := m1.metric(t, "coredns_gslb_fleet_members"); return v == 1 }) {
		v, _ := m1.metric(t, "coredns_gslb_fleet_members")
		t.Errorf("m1 isolated: expected fleet_members 1 (itself) within 40s, got %v", v)
	}

	px.Restore()
	within(t, 10*time.Second, "m1's later undrain on every member", all, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	testsupport.WaitFor(t, "m2 logging the change it applies from m1", func() (bool, string) {
		out := m2.out.String()
		return strings.Contains(out, "Fleet test: applying a deletion of drain/hz-a by ") && strings.Contains(out, ":"+portOf(m1.dns)), ""
	})
	testsupport.WaitFor(t, "m1 counting 3 members again", func() (bool, string) {
		v, _ := m1.metric(t, "coredns_gslb_fleet_members")
		return v == 3, fmt.Sprint(v)
	})
}

// TestFleetStateTooLarge: a pin that would take the fleet's shared state
// over what it stores is refused (507) before it is acknowledged, on a
// member whose state file would still take it; the pins before it, and
// later changes, reach every member.
func TestFleetStateTooLarge(t *testing.T) {
	e := newFleetEnv(t)
	// m1 starts from a state file of the older format (no origins) holding
	// 130 pins of 60,000-byte notes: 7.8 MB, under both limits.
	note := strings.Repeat("x", 60000)
	var b strings.Builder
	b.WriteString("{\n  \"pins\": [\n")
	for i := range 130 {
		sep := ","
		if i == 129 {
			sep = ""
		}
		fmt.Fprintf(&b, "    {\"cidr\":\"1.128.%d.0/24\",\"nodes\":[\"bj\"],\"note\":%q}%s\n", i, note, sep)
	}
	b.WriteString("  ]\n}\n")
	if err := os.WriteFile(filepath.Join(e.dir, "m1-state.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	m1 := e.start(t, "m1", "vantage telecom", "")
	m2 := e.start(t, "m2", "vantage telecom", "")
	m3 := e.start(t, "m3", "vantage unicom", "")
	all := []*fleetMember{m1, m2, m3}
	within(t, 10*time.Second, "m1's pins from its state file on every member", all, "www.example.org", "1.128.129.0/24", equal("192.0.2.4"))

	refused, last := false, ""
	for i := range 40 {
		cidr := fmt.Sprintf("1.129.%d.0/24", i)
		code, out := m1.call(t, "POST", "/v1/pins", fmt.Sprintf(`{"cidr": %q, "nodes": ["bj"], "note": %q}`, cidr, note))
		if code == 507 {
			if !strings.Contains(out, "fleet's shared state") {
				t.Errorf("Expected the 507 to name the fleet's shared state, got %s", out)
			}
			refused = true
			if a, err := m1.query("www.example.org", strings.TrimSuffix(cidr, "/24")+"/24"); err != nil || a == "192.0.2.4" {
				t.Errorf("m1: the refused pin of %s must not apply, got %s %v", cidr, a, err)
			}
			break
		}
		if code != 200 {
			t.Fatalf("POST /v1/pins %s: %d %s", cidr, code, out)
		}
		last = cidr
	}
	if !refused {
		t.Fatalf("Expected a 507 before the shared state passed 8 MiB, every pin was taken")
	}
	if last != "" {
		within(t, 10*time.Second, "the last pin taken on every member", all, "www.example.org", last, equal("192.0.2.4"))
	}
	m1.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, 10*time.Second, "a later drain through m1 on every member", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	m3.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
	within(t, 10*time.Second, "a later undrain through m3 on every member", all, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	// The state file now keeps origins, and m1 still loads it.
	data, err := os.ReadFile(filepath.Join(e.dir, "m1-state.yaml"))
	if err != nil || !strings.Contains(string(data), `"origins": {`) {
		t.Fatalf("Expected m1's state file in the new format, with origins: %v", err)
	}
	m1.stop()
	m1.launch(t)
	if a, err := m1.query("www.example.org", "1.128.0.0/24"); err != nil || a != "192.0.2.4" {
		t.Errorf("m1 after a restart: expected its pins, got %s %v", a, err)
	}
}
