package fleet

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// propLog is what the members of a property run reported: the conflicts
// they merged (OnConflict) and the losses they learnt (OnLost).
type propLog struct {
	mu     sync.Mutex
	losers map[string][]string // origin of a change that lost -> who logged it
}

func (l *propLog) add(who string, c Conflict) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := originKey(c.Key, c.Loser.Origin)
	l.losers[k] = append(l.losers[k], who)
}

func (l *propLog) logged(key string, o Origin) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.losers[originKey(key, o)]
}

func originKey(key string, o Origin) string {
	return key + "@" + o.Member + "@" + o.Time.UTC().Format(time.RFC3339Nano)
}

// acked is a change Set acknowledged, with the entry it made.
type acked struct {
	key   string
	entry Entry
}

// TestMergeProperty: random interleavings of changes, partitions,
// restarts and clock offsets over 3 members converge to one state, and
// every acknowledged change is in it, or was overtaken by a later change
// that saw it (a later one of the same member, or one over its origin),
// or lost a conflict that its member or the winner's logged.
func TestMergeProperty(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { mergeRun(t, seed, 40) })
	}
}

func mergeRun(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	rs := testredis.Start(t)
	lg := &propLog{losers: map[string][]string{}}
	offsets := []time.Duration{0, time.Hour, -time.Hour, 31 * 24 * time.Hour, 2 * time.Second, -3 * time.Second}
	type sim struct {
		id     string
		px     *testredis.Proxy
		offset time.Duration
		m      *member
		cut    bool
	}
	launch := func(s *sim, seedState *State) {
		s.m = startVia(t, s.px, s.id, telecom, func(c *Config) {
			c.Timeout = 300 * time.Millisecond
			c.SyncInterval = 50 * time.Millisecond
			c.Seed = seedState
			off := s.offset
			c.Now = func() time.Time { return time.Now().Add(off) }
			id := s.id
			c.OnConflict = func(cf Conflict) { lg.add(id, cf) }
			c.OnLost = func(cf Conflict) { lg.add(id, cf) }
		})
	}
	sims := make([]*sim, 3)
	for i := range sims {
		s := &sim{id: fmt.Sprintf("m%d", i+1), px: testredis.NewProxy(t, rs.Addr()), offset: offsets[rng.IntN(len(offsets))]}
		launch(s, nil)
		sims[i] = s
	}
	keys := []string{"drain/a", "drain/b", "pin/x", "canary"}
	var acks []acked
	var trace []string
	for step := range steps {
		s := sims[rng.IntN(len(sims))]
		switch op := rng.IntN(10); {
		case op < 6: // a change
			key := keys[rng.IntN(len(keys))]
			var v json.RawMessage
			if rng.IntN(3) > 0 {
				v = json.RawMessage(fmt.Sprintf(`{"step":%d}`, step))
			}
			st, err := s.m.Set(Change{Key: key, Value: v})
			if err != nil {
				t.Fatal(err)
			}
			acks = append(acks, acked{key, st.Entries[key]})
			trace = append(trace, fmt.Sprintf("%d %s set %s %s", step, s.id, key, v))
		case op < 8: // a partition, or its end
			if s.cut {
				s.px.Restore()
			} else {
				s.px.Cut()
			}
			s.cut = !s.cut
			trace = append(trace, fmt.Sprintf("%d %s cut %v", step, s.id, s.cut))
		default: // a restart from what the member kept (its state file)
			kept := s.m.State().clone()
			s.m.Close()
			if rng.IntN(2) == 0 {
				s.offset = offsets[rng.IntN(len(offsets))]
			}
			launch(s, kept)
			trace = append(trace, fmt.Sprintf("%d %s restart offset %v", step, s.id, s.offset))
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
	}
	for _, s := range sims {
		s.px.Restore()
	}
	var final map[string]Entry
	testsupport.WaitFor(t, "the members converging", func() (bool, string) {
		first := sims[0].m.State().Entries
		for _, s := range sims {
			if p := s.m.Stats().Pending; p > 0 {
				return false, fmt.Sprintf("%s: %d pending", s.id, p)
			}
			if !maps.EqualFunc(first, s.m.State().Entries, func(a, b Entry) bool { return a.Origin.same(b.Origin) && string(a.Value) == string(b.Value) }) {
				return false, fmt.Sprintf("%s differs: %v vs %v", s.id, first, s.m.State().Entries)
			}
		}
		final = first
		return true, ""
	})
	var in, causal, logged int
	for i, c := range acks {
		f, ok := final[c.key]
		if ok && f.Origin.same(c.entry.Origin) {
			in++
			continue // in the result
		}
		if !ok || !f.wins(c.entry) {
			t.Errorf("Seed %d: %s by %s at %v is neither in the result nor overtaken: %+v\n%s", seed, c.key, c.entry.Origin.Member,
				c.entry.Origin.Time, f, strings.Join(trace, "\n"))
			continue
		}
		seen := slices.ContainsFunc(acks[i+1:], func(d acked) bool {
			return d.key == c.key && (d.entry.Origin.Member == c.entry.Origin.Member && d.entry.Origin.Time.After(c.entry.Origin.Time) ||
				d.entry.Over != nil && d.entry.Over.same(c.entry.Origin))
		})
		switch {
		case seen:
			causal++
		case len(lg.logged(c.key, c.entry.Origin)) > 0:
			logged++
		}
		if !seen && len(lg.logged(c.key, c.entry.Origin)) == 0 {
			t.Errorf("Seed %d: %s by %s at %v was overtaken by %s at %v without seeing it, and no member logged it\n%s", seed, c.key,
				c.entry.Origin.Member, c.entry.Origin.Time, f.Origin.Member, f.Origin.Time, strings.Join(trace, "\n"))
		}
	}
	t.Logf("Seed %d: %d changes: %d in the result, %d overtaken by a later one that saw them, %d lost a logged conflict", seed, len(acks), in, causal, logged)
}
