package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestStampIsWhatSetGives: the origins Stamp hands out are those Set
// writes, after the key's last change even when the clock is behind it.
func TestStampIsWhatSetGives(t *testing.T) {
	rs := testredis.Start(t)
	clock := testsupport.NewClock()
	a := start(t, rs, "a", telecom, func(c *Config) { c.Now = clock.Now })
	a.Set(drain("n1"))
	first, _ := a.State().Get("drain/n1")
	clock.Add(-time.Hour) // the clock steps back
	st := a.Stamp([]Change{undrain("n1"), drain("n2")})
	if !st[0].Time.After(first.Origin.Time) {
		t.Errorf("Expected a stamp after the key's last change %v, got %v", first.Origin.Time, st[0].Time)
	}
	if !st[1].Time.Equal(clock.Now().UTC()) {
		t.Errorf("Expected a new key stamped now %v, got %v", clock.Now(), st[1].Time)
	}
	a.Set(st...)
	for _, c := range st {
		e := a.State().Entries[c.Key]
		if !e.Origin.Time.Equal(c.Time) || e.Origin.Member != "a" {
			t.Errorf("%s: expected the origin a@%v Stamp gave, got %+v", c.Key, c.Time, e.Origin)
		}
	}
}

// TestSameValueChangeWins: a change that sets what the key already holds
// still gets its own origin and wins over an earlier change of another
// member that crossed it.
func TestSameValueChangeWins(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, nil)
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "the drain on b", func() (bool, string) { return has(b, "drain/n1", "") })
	rs.Stop()
	a.Set(undrain("n1"))
	b.Set(drain("n1")) // b still sees n1 drained: the same value, a later change
	rs.Restart()
	testsupport.WaitFor(t, "b's drain on both", all([]*member{a, b}, func(m *member) (bool, string) {
		e, ok := m.State().Entries["drain/n1"]
		return ok && !e.Deleted() && e.Origin.Member == "b", fmt.Sprintf("%s: %+v", m.cfg.Member, e)
	}))
}

// TestSeedWithOriginsWins: a seed entry (the state file's) later than the
// fleet's wins and is written back; an older one fills only what Redis
// lacks; a seeded deletion removes an older entry.
func TestSeedWithOriginsWins(t *testing.T) {
	rs := testredis.Start(t)
	b := start(t, rs, "b", unicom, nil)
	b.Set(drain("n1"), drain("n2"), drain("n3"))
	testsupport.WaitFor(t, "b's drains in Redis", func() (bool, string) {
		return b.Stats().Pending == 0, fmt.Sprint(b.Stats().Pending)
	})
	t1, _ := b.State().Get("drain/n1")
	later := t1.Origin.Time.Add(time.Second)
	seed := &State{Entries: map[string]Entry{
		"drain/n1": {Origin: Origin{Member: "a", Time: later}},                                                                  // an undrain after b's drain
		"drain/n2": {Value: json.RawMessage(`{"old":true}`), Origin: Origin{Member: "a", Time: t1.Origin.Time.Add(-time.Hour)}}, // older
		"drain/n4": {Value: json.RawMessage(`{}`), Origin: Origin{Member: "a"}},                                                 // an older file's: no time
	}}
	a := start(t, rs, "a", telecom, func(c *Config) { c.Seed = seed })
	for _, m := range []*member{a, b} {
		testsupport.WaitFor(t, m.cfg.Member+" settling", func() (bool, string) {
			if ok, last := lacks(m, "drain/n1"); !ok {
				return false, last
			}
			if ok, last := has(m, "drain/n2", `{"since":"2026-12-01T00:00:00Z"}`); !ok {
				return false, last
			}
			return has(m, "drain/n4", "")
		})
	}
}

// TestFitsRefusesOversized: a change that would take the shared state
// over MaxStateBytes is refused before it is made; a small one fits.
func TestFitsRefusesOversized(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	big := json.RawMessage(`"` + strings.Repeat("x", MaxStateBytes/2) + `"`)
	a.Set(Change{Key: "pin/1", Value: big})
	if err := a.Fits([]Change{drain("n1")}); err != nil {
		t.Errorf("Expected a drain to fit, got %v", err)
	}
	err := a.Fits([]Change{{Key: "pin/2", Value: big}})
	var tl *TooLarge
	if !errors.As(err, &tl) || tl.Size <= MaxStateBytes || tl.Limit != MaxStateBytes {
		t.Fatalf("Expected TooLarge over %d, got %v", MaxStateBytes, err)
	}
	// Replacing the large entry counts it once.
	if err := a.Fits([]Change{{Key: "pin/1", Value: big}}); err != nil {
		t.Errorf("Expected a replacement of the same size to fit, got %v", err)
	}
}

// TestIsolatedCountsItselfAlone: while Redis is out of reach for longer
// than a verdict counts, the member counts itself alone.
func TestIsolatedCountsItselfAlone(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	start(t, rs, "b", unicom, nil)
	testsupport.WaitFor(t, "2 members", func() (bool, string) { s := a.Stats(); return s.Members == 2, fmt.Sprint(s.Members) })
	rs.Stop()
	testsupport.WaitFor(t, "a isolated, alone", func() (bool, string) {
		s := a.Stats()
		return s.Isolated && s.Members == 1, fmt.Sprint(s.Isolated, s.Members)
	})
	rs.Restart()
	testsupport.WaitFor(t, "2 members again", func() (bool, string) { s := a.Stats(); return s.Members == 2, fmt.Sprint(s.Members) })
}
