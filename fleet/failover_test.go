package fleet

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestFailoverConverges plays a failover whose new master lacks the last
// writes: m1 made them and m3 read them (both know their stamp and
// version), then m2, which never saw them, writes reusing their version,
// and m1 writes back what the master lost at a higher one. m1 and m3 must
// read every entry again, m2's included, though Redis's version is not
// below the one they knew: the stamp they knew is not in the master's log
// of writes.
func TestFailoverConverges(t *testing.T) {
	rs := testredis.Start(t)
	c := client(t, rs)
	ctx := t.Context()
	p1, p2, p3 := testredis.NewProxy(t, rs.Addr()), testredis.NewProxy(t, rs.Addr()), testredis.NewProxy(t, rs.Addr())
	m1 := startVia(t, p1, "m1", telecom, nil)
	m2 := startVia(t, p2, "m2", unicom, nil)
	m3 := startVia(t, p3, "m3", unicom, nil)
	ms := []*member{m1, m2, m3}
	m1.Set(drain("a"))
	testsupport.WaitFor(t, "drain/a on every member", all(ms, func(m *member) (bool, string) { return has(m, "drain/a", "") }))

	// The replica's copy: what the new master will hold.
	keys := []string{m1.keys.state, m1.keys.entries, m1.keys.vers}
	snap := map[string]string{}
	for _, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		snap[k] = d
	}

	// Writes the replica never gets: m3 reads them, m2 does not.
	p2.Cut()
	m1.Set(drain("b"))
	m1.Set(drain("c"))
	testsupport.WaitFor(t, "drain/b and drain/c on m3", func() (bool, string) {
		if ok, last := has(m3, "drain/b", ""); !ok {
			return false, last
		}
		return has(m3, "drain/c", "")
	})

	// The failover: the new master lacks them.
	p1.Cut()
	p3.Cut()
	for _, k := range keys {
		if err := c.RestoreReplace(ctx, k, 0, snap[k]).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
	}

	// m2 writes at a version m3 has read past; m3 does not see it.
	p2.Restore()
	m2.Set(drain("d"))
	inRedis := func(key string) func() (bool, string) {
		return func() (bool, string) {
			n, err := c.HExists(ctx, m1.keys.entries, key).Result()
			return n, fmt.Sprintf("%s in Redis: %v %v", key, n, err)
		}
	}
	testsupport.WaitFor(t, "m2's drain/d in Redis", inRedis("drain/d"))

	// m1 writes again, at a version past m3's, with what the master lost.
	m1.Set(drain("e"))
	p1.Restore()
	testsupport.WaitFor(t, "m1's drain/e in Redis", inRedis("drain/e"))
	testsupport.WaitFor(t, "m1's drain/b back in Redis", inRedis("drain/b"))

	p3.Restore()
	want := []string{"drain/a", "drain/b", "drain/c", "drain/d", "drain/e"}
	testsupport.WaitFor(t, "the same entries on every member", func() (bool, string) {
		ref := values(m1)
		if got := slices.Sorted(maps.Keys(ref)); !slices.Equal(got, want) {
			return false, fmt.Sprintf("m1 has %v (m2 %v, m3 %v)", got, slices.Sorted(maps.Keys(values(m2))), slices.Sorted(maps.Keys(values(m3))))
		}
		for _, m := range ms[1:] {
			if got := values(m); !maps.Equal(got, ref) {
				return false, fmt.Sprintf("%s has %v, m1 %v", m.cfg.Member, got, ref)
			}
		}
		return true, ""
	})
}

// values is m's live entries' values by key.
func values(m *member) map[string]string {
	out := map[string]string{}
	for k, e := range m.State().Entries {
		if !e.Deleted() {
			out[k] = string(e.Value)
		}
	}
	return out
}
