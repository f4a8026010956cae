package fleet

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// A change through one member reaches the others within 1 s, by the
// channel: their periodic re-read is set far slower.
func TestChangeReachesAllWithinASecond(t *testing.T) {
	rs := testredis.Start(t)
	slow := func(c *Config) { c.SyncInterval = time.Minute }
	a := start(t, rs, "a", telecom, slow)
	b := start(t, rs, "b", unicom, slow)
	c := start(t, rs, "c", telecom, slow)
	others := []*member{b, c}

	began := time.Now()
	if _, err := a.Set(drain("n1"), Change{Key: "pin/10.0.0.0/8", Value: json.RawMessage(`{"nodes":["n2"]}`)}); err != nil {
		t.Fatal(err)
	}
	if ok, last := has(a, "drain/n1", ""); !ok {
		t.Fatalf("Expected the change at once on the member that made it: %s", last)
	}
	testsupport.WaitFor(t, "the drain and pin on b and c", all(others, func(m *member) (bool, string) {
		if ok, last := has(m, "drain/n1", ""); !ok {
			return ok, last
		}
		return has(m, "pin/10.0.0.0/8", `{"nodes":["n2"]}`)
	}))
	if d := time.Since(began); d > time.Second {
		t.Errorf("Expected the change on every member within 1s, took %v", d)
	}
	e, _ := b.State().Get("drain/n1")
	if e.Origin.Member != "a" || e.Origin.Version == 0 || time.Since(e.Origin.Time) > time.Minute {
		t.Errorf("Expected the origin to be member a, now, with a version; got %+v", e.Origin)
	}

	began = time.Now()
	b.Set(undrain("n1"))
	testsupport.WaitFor(t, "the undrain on a and c", all([]*member{a, c}, func(m *member) (bool, string) { return lacks(m, "drain/n1") }))
	if d := time.Since(began); d > time.Second {
		t.Errorf("Expected the undrain on every member within 1s, took %v", d)
	}
	if e, ok := c.State().Entries["drain/n1"]; !ok || !e.Deleted() || e.Origin.Member != "b" {
		t.Errorf("Expected the deletion kept with its origin b, got %+v (present %v)", e, ok)
	}
	if n := a.Stats().Changes[ChangeKey{OriginRemote, ResultApplied}]; n < 1 {
		t.Errorf("Expected a to count b's change as remote applied, got %v", a.Stats().Changes)
	}
	if n := b.Stats().Changes[ChangeKey{OriginLocal, ResultApplied}]; n != 1 {
		t.Errorf("Expected b to count its change as local applied once, got %v", b.Stats().Changes)
	}
}

// The periodic re-read alone also brings a change: a missed announcement
// is not a lost change.
func TestReReadWithoutChannel(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", telecom, func(c *Config) { c.SyncInterval = 50 * time.Millisecond })
	b.ps.Unsubscribe(t.Context()) // b hears nothing
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "the drain on b", func() (bool, string) { return has(b, "drain/n1", "") })
}

// A member that starts later has the fleet's state when Start returns.
func TestLateJoinerReadsStateFirst(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	a.Set(drain("n1"), Change{Key: "canary", Value: json.RawMessage(`{"percent":20}`)})
	testsupport.WaitFor(t, "a's change in Redis", func() (bool, string) {
		return a.Stats().Pending == 0, fmt.Sprint(a.Stats())
	})
	// Its local copy is older than the fleet's, and has a pin the fleet lacks.
	seed := &State{Entries: map[string]Entry{
		"canary":           {Value: json.RawMessage(`{"percent":5}`), Origin: Origin{Member: "d", Time: time.Now().Add(-time.Hour)}},
		"pin/192.0.2.0/24": {Value: json.RawMessage(`{}`), Origin: Origin{Member: "d", Time: time.Now().Add(-time.Hour)}},
	}}
	d := start(t, rs, "d", unicom, func(c *Config) { c.Seed = seed })
	if ok, last := has(d, "drain/n1", ""); !ok {
		t.Errorf("Expected the late joiner to have the drain at start: %s", last)
	}
	if ok, last := has(d, "canary", `{"percent":20}`); !ok {
		t.Errorf("Expected the fleet's newer canary share over the local copy: %s", last)
	}
	testsupport.WaitFor(t, "the late joiner's pin on a", func() (bool, string) { return has(a, "pin/192.0.2.0/24", "") })
}

// Redis down: a change applies locally, is kept, and is written when Redis
// returns, empty; what the other members kept is written back too.
func TestRedisDownChangeKeptAndPublished(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, nil)
	b.Set(drain("n1"), drain("n2"))
	testsupport.WaitFor(t, "the drains on a", func() (bool, string) { return has(a, "drain/n2", "") })

	rs.Stop()
	began := time.Now()
	a.Set(undrain("n1"))
	if d := time.Since(began); d > testTimeout {
		t.Errorf("Expected Set not to wait for Redis, took %v", d)
	}
	if ok, last := lacks(a, "drain/n1"); !ok {
		t.Fatalf("Expected the undrain applied locally while Redis is down: %s", last)
	}
	testsupport.WaitFor(t, "the undrain counted pending", func() (bool, string) {
		s := a.Stats()
		return s.Pending == 1 && s.Changes[ChangeKey{OriginLocal, ResultPending}] == 1 && s.LastError != "", fmt.Sprint(s)
	})
	if ok, _ := lacks(b, "drain/n1"); ok {
		t.Fatalf("Expected b not to have the undrain while Redis is down")
	}

	rs.Restart()
	began = time.Now()
	testsupport.WaitFor(t, "the undrain on b after Redis returned", func() (bool, string) { return lacks(b, "drain/n1") })
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Expected the undrain on b within 2s of Redis returning, took %v", d)
	}
	if ok, last := has(b, "drain/n2", ""); !ok {
		t.Errorf("Expected the other drain kept: %s", last)
	}
	c := start(t, rs, "c", telecom, nil)
	if ok, last := has(c, "drain/n2", ""); !ok {
		t.Errorf("Expected the restarted Redis to hold the fleet's state again: %s", last)
	}
	if ok, last := lacks(c, "drain/n1"); !ok {
		t.Errorf("Expected the undrain in the restarted Redis: %s", last)
	}
	if s := a.Stats(); s.Pending != 0 || s.LastError != "" || s.SyncAge > time.Second {
		t.Errorf("Expected a in sync again, got %+v", s)
	}
}

// Two members change one key while Redis is down: the later change wins
// everywhere, and the loser is reported once.
func TestConflictLastWriterWins(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, nil)
	rs.Stop()
	a.Set(Change{Key: "canary", Value: json.RawMessage(`{"percent":10}`)})
	testsupport.WaitFor(t, "a's change pending", func() (bool, string) {
		return a.Stats().Changes[ChangeKey{OriginLocal, ResultPending}] == 1, fmt.Sprint(a.Stats())
	})
	b.Set(Change{Key: "canary", Value: json.RawMessage(`{"percent":30}`)})
	rs.Restart()

	ms := []*member{a, b}
	testsupport.WaitFor(t, "b's later change everywhere", all(ms, func(m *member) (bool, string) {
		return has(m, "canary", `{"percent":30}`)
	}))
	testsupport.WaitFor(t, "the conflict reported", func() (bool, string) {
		n := len(a.Conflicts()) + len(b.Conflicts())
		return n >= 1, fmt.Sprint(n)
	})
	cs := append(a.Conflicts(), b.Conflicts()...)
	if len(cs) != 1 {
		t.Fatalf("Expected exactly one conflict, got %+v", cs)
	}
	c := cs[0]
	if c.Key != "canary" || c.Loser.Origin.Member != "a" || string(c.Loser.Value) != `{"percent":10}` || c.Winner.Origin.Member != "b" {
		t.Errorf("Expected a's change to lose to b's, got %+v", c)
	}
	lost := a.Stats().Changes[ChangeKey{OriginLocal, ResultLost}] + b.Stats().Changes[ChangeKey{OriginRemote, ResultLost}]
	if lost != 1 {
		t.Errorf("Expected the lost change counted once, got a %v, b %v", a.Stats().Changes, b.Stats().Changes)
	}
}

// A change made after seeing another wins over it even when the later
// member's clock is behind.
func TestLaterChangeWinsOverSkewedClock(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, func(c *Config) { c.Now = func() time.Time { return time.Now().Add(-time.Hour) } })
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "a's drain on b", func() (bool, string) { return has(b, "drain/n1", "") })
	b.Set(undrain("n1"))
	testsupport.WaitFor(t, "b's undrain on a", func() (bool, string) { return lacks(a, "drain/n1") })
}

func TestMerge(t *testing.T) {
	now := time.Now()
	e := func(member string, ago time.Duration, v string) Entry {
		var raw json.RawMessage
		if v != "" {
			raw = json.RawMessage(v)
		}
		return Entry{Value: raw, Origin: Origin{Member: member, Time: now.Add(-ago)}}
	}
	local := map[string]Entry{"x": e("a", time.Minute, "1"), "y": e("a", time.Second, "2"), "old": e("a", 40*24*time.Hour, "")}
	remote := map[string]Entry{"x": e("b", time.Second, "3"), "y": e("b", time.Minute, "4"), "z": e("b", time.Minute, "")}
	got := merge(local, remote, now)
	want := map[string]string{"x": "3", "y": "2", "z": ""}
	if len(got) != len(want) {
		t.Fatalf("Expected keys %v, got %v", want, got)
	}
	for k, v := range want {
		if string(got[k].Value) != v {
			t.Errorf("Key %s: expected %q, got %q", k, v, got[k].Value)
		}
	}
	if !sameEntries(merge(remote, local, now), got) {
		t.Errorf("Expected the merge not to depend on which side is local")
	}
	tie := map[string]Entry{"x": {Value: json.RawMessage("9"), Origin: Origin{Member: "c", Time: got["x"].Origin.Time}}}
	if m := merge(got, tie, now); string(m["x"].Value) != "9" {
		t.Errorf("Expected a tie to go to the greater member id, got %s", m["x"].Value)
	}
}

// Redis unreachable at start: the member starts from its local copy, and
// writes it when Redis comes.
func TestStartWithoutRedisUsesSeed(t *testing.T) {
	rs := testredis.Start(t)
	rs.Stop()
	seed := &State{Entries: map[string]Entry{
		"drain/n1": {Value: json.RawMessage(`{}`), Origin: Origin{Member: "a", Time: time.Now().Add(-time.Minute), Version: 3}},
	}}
	began := time.Now()
	a := start(t, rs, "a", telecom, func(c *Config) { c.Seed = seed })
	if d := time.Since(began); d > 2*testTimeout+slack {
		t.Errorf("Expected Start bounded by the timeout without Redis, took %v", d)
	}
	if ok, last := has(a, "drain/n1", ""); !ok {
		t.Fatalf("Expected the local copy in force: %s", last)
	}
	rs.Restart()
	b := start(t, rs, "b", unicom, nil)
	testsupport.WaitFor(t, "a's local copy on b", func() (bool, string) { return has(b, "drain/n1", "") })
}

// A panic in a callback is recovered: the member goes on syncing.
func TestCallbackPanicRecovered(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, func(c *Config) { c.OnState = func(*State) { panic("callback") } })
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "the drain on b", func() (bool, string) { return has(b, "drain/n1", "") })
	a.Set(drain("n2"))
	testsupport.WaitFor(t, "the second drain on b", func() (bool, string) { return has(b, "drain/n2", "") })
}
