package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/redis/go-redis/v9"
)

// TestStatePerKeyInRedis: each key is a field of the entries hash, with
// the version that wrote it; a change rewrites its key alone.
func TestStatePerKeyInRedis(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	a.Set(drain("n1"), drain("n2"))
	c := client(t, rs)
	ctx := context.Background()
	testsupport.WaitFor(t, "both keys in Redis", func() (bool, string) {
		n, _ := c.HLen(ctx, a.keys.entries).Result()
		return n == 2, fmt.Sprint(n)
	})
	v1, _ := c.HGet(ctx, a.keys.vers, "drain/n1").Result()
	a.Set(undrain("n2"))
	testsupport.WaitFor(t, "the undrain in Redis", func() (bool, string) {
		raw, _ := c.HGet(ctx, a.keys.entries, "drain/n2").Result()
		e, err := decodeEntry([]byte(raw))
		return err == nil && e.Deleted(), raw
	})
	if v, _ := c.HGet(ctx, a.keys.vers, "drain/n1").Result(); v != v1 {
		t.Errorf("Expected drain/n1 untouched at version %s, got %s", v1, v)
	}
	if st, _ := c.HGet(ctx, a.keys.state, "stamp").Result(); !strings.Contains(st, ":a:") {
		t.Errorf("Expected a stamp of a's write, got %q", st)
	}
}

// TestLargeEntryDoesNotBlockOthers: an entry over the entry limit is
// refused by Fits before it is made; one a writer put into Redis is
// skipped, counted and deleted, and the other keys go on being shared.
func TestLargeEntryDoesNotBlockOthers(t *testing.T) {
	rs := testredis.Start(t)
	small := func(c *Config) { c.MaxEntryBytes = 4096 }
	a := start(t, rs, "a", telecom, small)
	b := start(t, rs, "b", unicom, small)
	big := json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)
	var tl *TooLarge
	if err := a.Fits([]Change{{Key: "pin/big", Value: big}}); !errors.As(err, &tl) || tl.Key != "pin/big" || tl.Limit != 4096 {
		t.Fatalf("Expected the entry refused by its limit, got %v", err)
	}
	c := client(t, rs)
	ctx := context.Background()
	data, _ := json.Marshal(Entry{Value: big, Origin: Origin{Member: "x", Time: time.Now()}})
	c.HSet(ctx, a.keys.entries, "pin/big", data)
	c.HSet(ctx, a.keys.vers, "pin/big", 1<<40)
	c.HSet(ctx, a.keys.state, "stamp", "forged")
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "a's drain on b past the large entry", func() (bool, string) { return has(b, "drain/n1", "") })
	testsupport.WaitFor(t, "the large entry skipped and deleted", func() (bool, string) {
		n, _ := c.HExists(ctx, a.keys.entries, "pin/big").Result()
		return !n && b.Stats().Skipped+a.Stats().Skipped > 0, fmt.Sprint(n, b.Stats().Skipped)
	})
	if _, ok := b.State().Get("pin/big"); ok {
		t.Errorf("Expected the large entry never applied")
	}
}

// TestMalformedEntriesSkipped: an entry that is not JSON, one without an
// origin and one without a version are skipped and counted, never fatal:
// the one a member holds is written back, the others deleted.
func TestMalformedEntriesSkipped(t *testing.T) {
	a, b, c := sharingPair(t)
	ctx := context.Background()
	c.HSet(ctx, a.keys.entries, "drain/n1", "{not json", "drain/n9", `{"v":{}}`, "drain/n8", `{"v":{},"o":{"member":"x","time":"2026-12-01T00:00:00Z"}}`)
	c.HSet(ctx, a.keys.vers, "drain/n1", 1<<40, "drain/n9", 1<<40)
	c.HSet(ctx, a.keys.state, "stamp", "forged", "version", 1<<40)
	a.Set(drain("n2"))
	ms := []*member{a, b}
	testsupport.WaitFor(t, "sharing going on", all(ms, func(m *member) (bool, string) { return has(m, "drain/n2", "") }))
	testsupport.WaitFor(t, "the malformed entries repaired", func() (bool, string) {
		raw, _ := c.HGet(ctx, a.keys.entries, "drain/n1").Result()
		_, err := decodeEntry([]byte(raw))
		n9, _ := c.HExists(ctx, a.keys.entries, "drain/n9").Result()
		n8, _ := c.HExists(ctx, a.keys.entries, "drain/n8").Result()
		return err == nil && !n9 && !n8, fmt.Sprint(raw, n9, n8)
	})
	keptAndCounted(t, a, b, 3)
}

// TestWrongTypeKeyRepaired: a key of the state that is not a hash is
// deleted, logged and counted, and the members write their state back.
func TestWrongTypeKeyRepaired(t *testing.T) {
	a, b, c := sharingPair(t)
	ctx := context.Background()
	for _, k := range []string{a.keys.entries, a.keys.state} {
		c.Del(ctx, k)
		c.Set(ctx, k, "garbage", 0)
		a.Set(drain("n" + fmt.Sprint(len(k))))
		testsupport.WaitFor(t, "the state written back after "+k, func() (bool, string) {
			typ, _ := c.Type(ctx, a.keys.entries).Result()
			n, _ := c.HLen(ctx, a.keys.entries).Result()
			return typ == "hash" && n >= 2, fmt.Sprint(typ, n)
		})
		testsupport.WaitFor(t, "a's change on b", func() (bool, string) { return has(b, "drain/n"+fmt.Sprint(len(k)), "") })
	}
	keptAndCounted(t, a, b, 2)
}

// TestSetManyKeysAsOne: a change of two keys reaches another member as
// one: it never holds one key's new value with the other's old.
func TestSetManyKeysAsOne(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	var b *member
	var mixed atomic.Int64
	var mu sync.Mutex
	var seen []string
	check := func(s *State) {
		x, _ := s.Get("pin/x")
		y, _ := s.Get("pin/y")
		if string(x.Value) != string(y.Value) {
			mixed.Add(1)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s/%s", x.Value, y.Value))
			mu.Unlock()
		}
	}
	b = start(t, rs, "b", unicom, func(c *Config) { c.OnState = check })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			check(b.State())
		}
	}()
	for i := range 30 {
		v := json.RawMessage(fmt.Sprint(i))
		a.Set(Change{Key: "pin/x", Value: v}, Change{Key: "pin/y", Value: v})
		time.Sleep(5 * time.Millisecond) // several syncs in flight: the scenario
	}
	testsupport.WaitFor(t, "the last change on b", func() (bool, string) { return has(b, "pin/y", "29") })
	close(stop)
	<-done
	if n := mixed.Load(); n != 0 {
		t.Errorf("Expected b never to hold part of a change, saw %d: %v", n, seen)
	}
}

// TestLoserLogsTheConflict: a's accepted change, overtaken by b's made
// without seeing it, is reported on a when a learns it (OnLost), while b,
// which merged them, reports the conflict (OnConflict).
func TestLoserLogsTheConflict(t *testing.T) {
	rs := testredis.Start(t)
	var lost []Conflict
	var mu sync.Mutex
	a := start(t, rs, "a", telecom, func(c *Config) {
		c.OnLost = func(cf Conflict) { mu.Lock(); lost = append(lost, cf); mu.Unlock() }
	})
	px := testredis.NewProxy(t, rs.Addr())
	b := startVia(t, px, "b", unicom, nil)
	px.Cut()
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "a's drain accepted", func() (bool, string) { return a.Stats().Pending == 0, fmt.Sprint(a.Stats()) })
	b.Set(Change{Key: "drain/n1", Value: json.RawMessage(`{"by":"b"}`)})
	px.Restore()
	testsupport.WaitFor(t, "b's later change on a", func() (bool, string) { return has(a, "drain/n1", `{"by":"b"}`) })
	testsupport.WaitFor(t, "a learning it lost", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(lost) == 1, fmt.Sprint(lost)
	})
	mu.Lock()
	l := lost[0]
	mu.Unlock()
	if l.Key != "drain/n1" || l.Loser.Origin.Member != "a" || l.Winner.Origin.Member != "b" {
		t.Errorf("Expected a's drain lost to b's, got %+v", l)
	}
	if cs := b.Conflicts(); len(cs) != 1 || cs[0].Loser.Origin.Member != "a" {
		t.Errorf("Expected b to report the conflict once, got %+v", cs)
	}
	// A later change made after seeing b's is no conflict.
	a.Set(undrain("n1"))
	testsupport.WaitFor(t, "a's undrain on b", func() (bool, string) { return lacks(b, "drain/n1") })
	b.Set(drain("n1"))
	testsupport.WaitFor(t, "b's drain on a", func() (bool, string) { return has(a, "drain/n1", "") })
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 1 {
		t.Errorf("Expected no more losses, got %+v", lost)
	}
}

// TestRejectCounts: an entry the member's user cannot take is counted as
// skipped, and logged at most once a minute.
func TestRejectCounts(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	before := a.Stats().Skipped
	a.Reject("drain/x", "not a drain")
	a.Reject("drain/x", "not a drain")
	if n := a.Stats().Skipped - before; n != 2 {
		t.Errorf("Expected 2 counted, got %d", n)
	}
	a.mu.Lock()
	logged := len(a.skipLogged)
	a.mu.Unlock()
	if logged != 1 {
		t.Errorf("Expected one key logged, got %d", logged)
	}
}

// sharingPair is two members sharing a's drain of n1, and a client of
// their Redis, as another writer would have.
func sharingPair(t *testing.T) (a, b *member, c redis.UniversalClient) {
	rs := testredis.Start(t)
	a = start(t, rs, "a", telecom, nil)
	b = start(t, rs, "b", unicom, nil)
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "the drain on b", func() (bool, string) { return has(b, "drain/n1", "") })
	return a, b, client(t, rs)
}

// keptAndCounted: b still has drain/n1, and the members counted at least
// n entries skipped.
func keptAndCounted(t *testing.T, a, b *member, n uint64) {
	t.Helper()
	if ok, last := has(b, "drain/n1", ""); !ok {
		t.Errorf("Expected drain/n1 kept: %s", last)
	}
	if got := a.Stats().Skipped + b.Stats().Skipped; got < n {
		t.Errorf("Expected at least %d entries counted as skipped, got %d", n, got)
	}
}
