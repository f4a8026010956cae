package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

func report(member string, v Vantage, nodes map[string]NodeVerdict) Report {
	return Report{Member: member, Vantage: v, Nodes: nodes}
}

var (
	up   = NodeVerdict{Load: 0.2}
	down = NodeVerdict{Down: true}
)

func TestCombineQuorum(t *testing.T) {
	mobile := Vantage{Carrier: "mobile"}
	reports := []Report{
		report("a", telecom, map[string]NodeVerdict{"n1": up, "n2": down, "n3": up}),
		report("b", telecom, map[string]NodeVerdict{"n1": up, "n2": up, "n3": down}),
		report("c", telecom, map[string]NodeVerdict{"n1": up, "n2": down, "n3": up}),
		report("d", unicom, map[string]NodeVerdict{"n1": down, "n2": up, "n3": up}),
		report("e", mobile, map[string]NodeVerdict{"n1": up, "n2": up, "n3": up}),
	}
	for _, tc := range []struct {
		quorum          float64
		node, carrier   string
		down            bool
		vantage         string
		downVotes, vots int
	}{
		{0.5, "n1", "unicom", true, "unicom", 1, 1},
		{0.5, "n1", "telecom", false, "telecom", 0, 3},
		{0.5, "n1", "edu", false, VantageFleet, 1, 3}, // 1 of 3 carriers
		{0.5, "n2", "telecom", true, "telecom", 2, 3},
		{0.7, "n2", "telecom", false, "telecom", 2, 3},
		{0.5, "n3", "telecom", false, "telecom", 1, 3},
		{0.3, "n3", "telecom", true, "telecom", 1, 3},
		{0.3, "n1", "edu", true, VantageFleet, 1, 3},
	} {
		d, ok := Combine(reports, tc.quorum).Decide(tc.node, tc.carrier)
		if !ok || d.Down != tc.down || d.Vantage != tc.vantage || d.DownVotes != tc.downVotes || d.Votes != tc.vots {
			t.Errorf("Quorum %v, %s for %s: expected down %v by %s %d/%d, got %+v (ok %v)",
				tc.quorum, tc.node, tc.carrier, tc.down, tc.vantage, tc.downVotes, tc.vots, d, ok)
		}
	}
	if _, ok := Combine(reports, 0.5).Decide("n9", "telecom"); ok {
		t.Errorf("Expected no decision for a node no member reports")
	}
	// Every member combining the same reports, in any order, decides alike.
	want := Combine(reports, 0.5)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := append([]Report(nil), reports...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Combine(shuffled, 0.5); !reflect.DeepEqual(got, want) {
			t.Fatalf("Expected the same verdicts in any order, got %+v, want %+v", got, want)
		}
	}
}

// keepReporting has m report nodes every 50ms until the test ends.
func keepReporting(t *testing.T, m *member, nodes func() map[string]NodeVerdict) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			m.Report(nodes())
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

func decided(m *member, node, carrier string, down bool, vantage string, votes int) (bool, string) {
	d, ok := m.Verdicts().Decide(node, carrier)
	if !ok || d.Down != down || d.Vantage != vantage || d.Votes != votes {
		return false, fmt.Sprintf("%s: %s for %s: %+v (ok %v)", m.cfg.Member, node, carrier, d, ok)
	}
	return true, ""
}

// A node dark from unicom only is down for unicom clients on every member
// and up for telecom clients; a member that stops reporting is forgotten
// after 3 intervals; without Redis a member answers from its own probes.
func TestVerdictsPerVantage(t *testing.T) {
	rs := testredis.Start(t)
	// Intervals long enough that a loaded machine's delays are small beside
	// them: staleness is timed below.
	long := func(c *Config) { c.ProbeInterval = 2 * time.Second }
	a := start(t, rs, "a", telecom, long)
	b := start(t, rs, "b", unicom, long)
	c := start(t, rs, "c", telecom, long)
	ms := []*member{a, b, c}
	keepReporting(t, a, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": up} })
	stopB := keepReporting(t, b, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": down} })
	var cDown atomic.Bool
	keepReporting(t, c, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": {Down: cDown.Load()}} })

	testsupport.WaitFor(t, "n1 down for unicom on every member", all(ms, func(m *member) (bool, string) {
		return decided(m, "n1", "unicom", true, "unicom", 1)
	}))
	testsupport.WaitFor(t, "n1 up for telecom on every member", all(ms, func(m *member) (bool, string) {
		return decided(m, "n1", "telecom", false, "telecom", 2)
	}))
	// No member sees from mobile: one of two carriers sees n1 down, a tie,
	// which quorum 0.5 does not take for down.
	testsupport.WaitFor(t, "n1 by the fleet for mobile", all(ms, func(m *member) (bool, string) {
		return decided(m, "n1", "mobile", false, VantageFleet, 2)
	}))
	testsupport.WaitFor(t, "three members", all(ms, func(m *member) (bool, string) {
		return m.Stats().Members == 3, fmt.Sprint(m.Stats())
	}))

	// b's probes stop: unicom's last verdict is held, then forgotten, and
	// telecom decides for all.
	stopB()
	began := time.Now()
	testsupport.WaitFor(t, "b's stale verdict held for unicom", all([]*member{a, c}, func(m *member) (bool, string) {
		d, ok := m.Verdicts().Decide("n1", "unicom")
		return ok && d.Held && d.Down && d.Vantage == "unicom", fmt.Sprintf("%+v", d)
	}))
	if d, most := time.Since(began), 4*a.cfg.ProbeInterval; d > most {
		t.Errorf("Expected a stale verdict held after 3 intervals, took %v", d)
	}
	// Forgotten 10 intervals after its last write, which may follow the
	// stop by a round, seen at the next round.
	if !poll((forgetAfter+1)*a.cfg.ProbeInterval+slack, func() bool { ok, _ := decided(a, "n1", "unicom", false, VantageFleet, 1); return ok }) {
		t.Errorf("Expected b's verdict forgotten after %d intervals", forgetAfter)
	}
	if d, least := time.Since(began), (forgetAfter-1)*a.cfg.ProbeInterval; d < least {
		t.Errorf("Expected b's verdict held until %d intervals after it was written, forgotten after %v", forgetAfter, d)
	}

	// Redis down: c's verdict goes stale on a, which answers from its own.
	cDown.Store(true)
	testsupport.WaitFor(t, "c's down verdict on a, a tie: up", func() (bool, string) {
		d, _ := a.Verdicts().Decide("n1", "telecom")
		return d.DownVotes == 1 && d.Votes == 2 && !d.Down, fmt.Sprintf("%+v", d)
	})
	rs.Stop()
	testsupport.WaitFor(t, "a on its own probes", func() (bool, string) {
		if !a.Stats().Isolated {
			return false, fmt.Sprint(a.Stats())
		}
		return decided(a, "n1", "telecom", false, "telecom", 1)
	})
}

// A tie is not a quorum at 0.5: one prober of two (two of four) does not
// remove a node alone, neither does one vantage of two for the others;
// below 0.5 it does.
func TestCombineTie(t *testing.T) {
	two := []Report{
		report("a", unicom, map[string]NodeVerdict{"n1": down}),
		report("b", unicom, map[string]NodeVerdict{"n1": up}),
		report("c", telecom, map[string]NodeVerdict{"n1": up}),
	}
	four := []Report{
		report("a", unicom, map[string]NodeVerdict{"n1": down}),
		report("b", unicom, map[string]NodeVerdict{"n1": down}),
		report("c", unicom, map[string]NodeVerdict{"n1": up}),
		report("d", unicom, map[string]NodeVerdict{"n1": up}),
		report("e", telecom, map[string]NodeVerdict{"n1": down}),
	}
	for _, tc := range []struct {
		name            string
		reports         []Report
		quorum          float64
		carrier         string
		down            bool
		downVotes, vots int
	}{
		{"one of two", two, 0.5, "unicom", false, 1, 2},
		{"one of two, quorum 0.4", two, 0.4, "unicom", true, 1, 2},
		{"two of four", four, 0.5, "unicom", false, 2, 4},
		{"two of four, quorum 0.4", four, 0.4, "unicom", true, 2, 4},
		{"one vantage of two", four, 0.5, "mobile", false, 1, 2},
		{"one vantage of two, quorum 0.4", four, 0.4, "mobile", true, 2, 2},
	} {
		d, ok := Combine(tc.reports, tc.quorum).Decide("n1", tc.carrier)
		if !ok || d.Down != tc.down || d.DownVotes != tc.downVotes || d.Votes != tc.vots {
			t.Errorf("%s: expected down %v %d/%d, got %+v", tc.name, tc.down, tc.downVotes, tc.vots, d)
		}
	}
}

// The held reports of a vantage with no fresh one decide for its carrier
// (marked Held) and count among the vantages; a vantage with a fresh
// report ignores its held ones.
func TestCombineHeld(t *testing.T) {
	fresh := []Report{report("a", telecom, map[string]NodeVerdict{"n1": up})}
	held := []Report{
		report("b", unicom, map[string]NodeVerdict{"n1": down}),
		report("c", telecom, map[string]NodeVerdict{"n1": down}),
	}
	v := CombineHeld(fresh, held, 0.5)
	if d, ok := v.Decide("n1", "unicom"); !ok || !d.Down || !d.Held || d.Vantage != "unicom" {
		t.Errorf("Expected unicom's held verdict, got %+v", d)
	}
	if d, ok := v.Decide("n1", "telecom"); !ok || d.Down || d.Held || d.Votes != 1 {
		t.Errorf("Expected telecom's fresh verdict alone, got %+v", d)
	}
	if d, _ := v.Decide("n1", "mobile"); d.Vantage != VantageFleet || d.Votes != 2 || d.Down {
		t.Errorf("Expected the two vantages' tie, up, for mobile, got %+v", d)
	}
	if got := CombineHeld(fresh, nil, 0.5); !reflect.DeepEqual(got, Combine(fresh, 0.5)) {
		t.Errorf("Expected CombineHeld without held reports to be Combine")
	}
}
