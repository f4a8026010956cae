package fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// probers lists the members (not in gone) that probe node.
func probers(ms []*member, node string, gone *member) []string {
	var ids []string
	for _, m := range ms {
		if m != gone && m.Probing(node) {
			ids = append(ids, m.cfg.Member)
		}
	}
	return ids
}

// With probers 1, one member of a vantage probes each node; when it
// crashes another takes over within two intervals, and a member of
// another vantage probes on its own.
func TestLeasesOneProberAndTakeover(t *testing.T) {
	rs := testredis.Start(t)
	nodes := []string{"n1", "n2", "n3"}
	// Intervals long enough that a loaded machine's delays are small
	// beside them.
	one := func(c *Config) { c.Probers, c.ProbeInterval = 1, 2*time.Second }
	var ms []*member
	for _, id := range []string{"a", "b", "c"} {
		m := start(t, rs, id, telecom, one)
		m.SetNodes(nodes)
		keepReporting(t, m, func() map[string]NodeVerdict { return map[string]NodeVerdict{} })
		ms = append(ms, m)
	}
	u := start(t, rs, "u", unicom, one)
	u.SetNodes(nodes)
	keepReporting(t, u, func() map[string]NodeVerdict { return map[string]NodeVerdict{} })

	for _, n := range nodes {
		testsupport.WaitFor(t, "one telecom prober of "+n, func() (bool, string) {
			p := probers(ms, n, nil)
			return len(p) == 1, fmt.Sprint(p)
		})
		testsupport.WaitFor(t, "the unicom member probing "+n, func() (bool, string) { return u.Probing(n), "" })
	}
	holder := ms[0]
	for _, m := range ms {
		if m.Probing("n1") {
			holder = m
		}
	}
	holder.stop(false) // a crash: its leases are not released
	began := time.Now()
	var took time.Duration
	testsupport.WaitFor(t, "another member taking over n1", func() (bool, string) {
		p := probers(ms, "n1", holder)
		if len(p) > 1 {
			t.Fatalf("Expected at most one prober of n1, got %v", p)
		}
		took = time.Since(began)
		return len(p) == 1, fmt.Sprint(p)
	})
	// Two intervals, and a round's latency on a loaded machine.
	if most := 2*holder.cfg.ProbeInterval + slack; took > most {
		t.Errorf("Expected the takeover within two intervals, took %v", took)
	}
}

// probers 2 of three members: two probe each node; a member that closes
// hands its leases over at the next round.
func TestLeasesTwoProbersAndClose(t *testing.T) {
	rs := testredis.Start(t)
	var ms []*member
	for _, id := range []string{"a", "b", "c"} {
		m := start(t, rs, id, telecom, func(c *Config) { c.Probers = 2 })
		m.SetNodes([]string{"n1"})
		keepReporting(t, m, func() map[string]NodeVerdict { return map[string]NodeVerdict{} })
		ms = append(ms, m)
	}
	testsupport.WaitFor(t, "two probers of n1", func() (bool, string) {
		p := probers(ms, "n1", nil)
		return len(p) == 2, fmt.Sprint(p)
	})
	var leaving *member
	for _, m := range ms {
		if m.Probing("n1") {
			leaving = m
		}
	}
	leaving.Close()
	testsupport.WaitFor(t, "two probers again", func() (bool, string) {
		p := probers(ms, "n1", leaving)
		return len(p) == 2, fmt.Sprint(p)
	})
}

// Redis down: leases cannot be renewed, and every member probes.
func TestLeasesLapseWithoutRedis(t *testing.T) {
	rs := testredis.Start(t)
	var ms []*member
	for _, id := range []string{"a", "b"} {
		m := start(t, rs, id, telecom, func(c *Config) { c.Probers = 1 })
		m.SetNodes([]string{"n1"})
		keepReporting(t, m, func() map[string]NodeVerdict { return map[string]NodeVerdict{} })
		ms = append(ms, m)
	}
	testsupport.WaitFor(t, "one prober", func() (bool, string) {
		p := probers(ms, "n1", nil)
		return len(p) == 1, fmt.Sprint(p)
	})
	rs.Stop()
	testsupport.WaitFor(t, "every member probing", func() (bool, string) {
		p := probers(ms, "n1", nil)
		return len(p) == 2, fmt.Sprint(p)
	})
}

// The canary's counters add up across members, and of three members
// deciding a rollback at once one wins and every one applies it.
func TestCanaryFleetWide(t *testing.T) {
	rs := testredis.Start(t)
	var ms []*member
	for _, id := range []string{"a", "b", "c"} {
		m := start(t, rs, id, telecom, nil)
		m.WatchCanary("c1")
		ms = append(ms, m)
	}
	window := time.Unix(1700000000, 0)
	var last CanaryCounts
	for i, m := range ms {
		got, err := m.CanaryAdd(t.Context(), "c1", window, time.Minute, CanaryCounts{CanarySame: 1, CanaryCross: int64(i), StableSame: 2, StableCross: 1})
		if err != nil {
			t.Fatal(err)
		}
		last = got
	}
	if want := (CanaryCounts{CanarySame: 3, CanaryCross: 3, StableSame: 6, StableCross: 3}); last != want {
		t.Errorf("Expected the fleet's totals %+v, got %+v", want, last)
	}
	other, _ := ms[0].CanaryAdd(t.Context(), "c1", window.Add(time.Minute), time.Minute, CanaryCounts{CanarySame: 1})
	if other != (CanaryCounts{CanarySame: 1}) {
		t.Errorf("Expected a new window to count from zero, got %+v", other)
	}

	var wg sync.WaitGroup
	won := make([]bool, len(ms))
	for i, m := range ms {
		wg.Go(func() {
			rb, w, err := m.TryRollback(context.Background(), "c1", "cross-province ratio by "+m.cfg.Member)
			if err != nil || rb.Identity != "c1" {
				t.Errorf("TryRollback on %s: %+v, %v", m.cfg.Member, rb, err)
			}
			won[i] = w
		})
	}
	wg.Wait()
	var winners int
	for _, w := range won {
		if w {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("Expected one member to decide the rollback, got %v", won)
	}
	testsupport.WaitFor(t, "the rollback on every member", all(ms, func(m *member) (bool, string) {
		rbs := m.Rollbacks()
		return len(rbs) == 1, fmt.Sprintf("%s: %+v", m.cfg.Member, rbs)
	}))
	first := ms[0].Rollbacks()[0]
	for _, m := range ms {
		if rb := m.Rollbacks()[0]; rb != first {
			t.Errorf("Expected the same rollback everywhere, %s has %+v, a has %+v", m.cfg.Member, rb, first)
		}
	}
	// A member that starts later learns it too.
	d := start(t, rs, "d", unicom, nil)
	d.WatchCanary("c1")
	testsupport.WaitFor(t, "the rollback on a late member", func() (bool, string) { return len(d.Rollbacks()) == 1, "" })
}

// A Redis that does not answer costs at most the timeout.
func TestFrozenRedisBounded(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	rs.Pause()
	defer rs.Resume()
	began := time.Now()
	_, _, err := a.TryRollback(context.Background(), "c1", "test")
	if err == nil {
		t.Fatalf("Expected an error from a frozen Redis")
	}
	if d := time.Since(began); d > testTimeout+slack {
		t.Errorf("Expected the call bounded by the timeout %v, took %v", testTimeout, d)
	}
	// A round in flight, then leaving.
	began = time.Now()
	a.Close()
	if d := time.Since(began); d > 2*testTimeout+slack {
		t.Errorf("Expected Close bounded by twice the timeout, took %v", d)
	}
}
