package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/redis/go-redis/v9"
)

func redisZ(score int64, member string) redis.Z {
	return redis.Z{Score: float64(score), Member: member}
}

// redisNow is Redis's clock in ms, as the scripts read it.
func redisNow(t *testing.T, m *member) int64 {
	t.Helper()
	tm, err := m.cfg.Client.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

// repairedOf reports whether one of ms repaired something of kind what.
func repairedOf(what string, ms ...*member) (bool, string) {
	var last string
	for _, m := range ms {
		s := m.Stats()
		if s.Repaired[what] > 0 {
			return true, ""
		}
		last += fmt.Sprint(m.cfg.Member, s.Repaired, s.LastError, " ")
	}
	return false, last
}

// A writer of the fleet's keys can do no lasting harm: a report or a
// heartbeat timed ahead of Redis's clock, a report time that is not a
// number, a report claiming a huge interval, and keys of the wrong type
// are repaired (deleted and counted) or bounded, and sharing goes on.
func TestHostileVerdicts(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	b := start(t, rs, "b", unicom, nil)
	keepReporting(t, a, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": up} })
	keepReporting(t, b, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": up} })
	ctx := context.Background()
	c := a.cfg.Client
	k := a.keys
	ahead := redisNow(t, a) + 10*365*24*3600*1000
	forged := `{"member":"x","vantage":{"carrier":"mobile"},"interval_ms":400,"nodes":{"n1":{"down":true}}}`

	// A report ten years ahead: deleted at the next round, never counted.
	c.HSet(ctx, k.verdicts, "x", forged)
	c.HSet(ctx, k.verdictsAt, "x", ahead)
	testsupport.WaitFor(t, "the report from the future repaired", func() (bool, string) { return repairedOf(RepairedReport, a, b) })
	if n, _ := c.HExists(ctx, k.verdicts, "x").Result(); n {
		t.Errorf("Expected the report from the future deleted")
	}
	if d, ok := a.Verdicts().Decide("n1", "mobile"); !ok || d.Down {
		t.Errorf("Expected n1 up for mobile despite the forged report, got %+v", d)
	}

	// A heartbeat ten years ahead: not a member.
	c.ZAdd(ctx, k.members, redisZ(ahead, "ghost"))
	testsupport.WaitFor(t, "the heartbeat from the future repaired", func() (bool, string) { return repairedOf(RepairedHeartbeat, a, b) })
	testsupport.WaitFor(t, "two members", func() (bool, string) { return a.Stats().Members == 2, fmt.Sprint(a.Stats()) })

	// A time that is not a number: deleted, the round goes on.
	c.HSet(ctx, k.verdicts, "y", forged)
	c.HSet(ctx, k.verdictsAt, "y", "soon")
	testsupport.WaitFor(t, "the report without a time deleted", func() (bool, string) {
		n, _ := c.HExists(ctx, k.verdicts, "y").Result()
		return !n, "still there"
	})

	// Keys of the wrong type: deleted and counted; b's verdicts reach a
	// again.
	for _, key := range []string{k.verdicts, k.verdictsAt, k.members} {
		c.Del(ctx, key)
		c.Set(ctx, key, "garbage", 0)
	}
	testsupport.WaitFor(t, "the keys of the wrong type repaired", func() (bool, string) { return repairedOf(RepairedKey, a, b) })
	testsupport.WaitFor(t, "b's verdict on a again", func() (bool, string) { return decided(a, "n1", "unicom", false, "unicom", 1) })
	if s := a.Stats(); s.LastError != "" {
		t.Errorf("Expected sharing to go on, got %q", s.LastError)
	}

	// A report that claims a ten-year interval, timed now: it counts at
	// most as long as Redis keeps it, then it is gone.
	long := `{"member":"z","vantage":{"carrier":"mobile"},"interval_ms":315360000000,"nodes":{"n1":{"down":true}}}`
	c.HSet(ctx, k.verdicts, "z", long)
	c.HSet(ctx, k.verdictsAt, "z", redisNow(t, a))
	began := time.Now()
	testsupport.WaitFor(t, "z's report seen", func() (bool, string) { return decided(a, "n1", "mobile", true, "mobile", 1) })
	if !poll(a.heldFor()+slack+time.Second, func() bool { _, ok := a.Verdicts().Carriers("n1")["mobile"]; return !ok }) {
		t.Errorf("Expected z's report gone %v after it was written", a.heldFor())
	}
	t.Logf("The report claiming a ten-year interval counted for %v", time.Since(began))
}

// A lease key without a TTL held by a non-member is repaired: a member
// takes the node's probes within a round, not never.
func TestHostileLease(t *testing.T) {
	rs := testredis.Start(t)
	ctx := context.Background()
	one := func(c *Config) { c.Probers = 1 }
	a := start(t, rs, "a", telecom, one)
	a.SetNodes([]string{"n1"})
	keepReporting(t, a, func() map[string]NodeVerdict { return map[string]NodeVerdict{} })
	key := a.leaseKeys([]string{"n1"})[0]
	testsupport.WaitFor(t, "a probing n1", func() (bool, string) { return a.Probing("n1"), "" })
	// Forged: held by a non-member, with no TTL.
	a.cfg.Client.Set(ctx, key, "mallory", 0)
	testsupport.WaitFor(t, "the forged lease repaired", func() (bool, string) { return repairedOf(RepairedLease, a) })
	testsupport.WaitFor(t, "a probing n1 again", func() (bool, string) {
		v, _ := a.cfg.Client.Get(ctx, key).Result()
		return a.Probing("n1") && v == "a", v
	})
	// Held by a member but without a TTL: repaired too.
	a.cfg.Client.Set(ctx, key, "a", 0)
	testsupport.WaitFor(t, "the lease without a TTL given one", func() (bool, string) {
		ttl, _ := a.cfg.Client.PTTL(ctx, key).Result()
		return ttl > 0 && ttl <= a.leaseTTL(), fmt.Sprint(ttl)
	})
	// Of the wrong type.
	a.cfg.Client.Del(ctx, key)
	a.cfg.Client.HSet(ctx, key, "f", "v")
	testsupport.WaitFor(t, "the lease of the wrong type replaced", func() (bool, string) {
		v, err := a.cfg.Client.Get(ctx, key).Result()
		return v == "a", fmt.Sprint(v, err)
	})
	if s := a.Stats(); s.LastError != "" {
		t.Errorf("Expected leasing to go on, got %q", s.LastError)
	}
}

// A member whose clock is an hour fast (or slow) times nothing the others
// rely on: its reports are timed by Redis, count while fresh, are held,
// then forgotten as anyone's.
func TestVerdictsClockSkew(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	fast := start(t, rs, "fast", unicom, func(c *Config) { c.Now = func() time.Time { return time.Now().Add(time.Hour) } })
	slow := start(t, rs, "slow", Vantage{Carrier: "mobile"}, func(c *Config) { c.Now = func() time.Time { return time.Now().Add(-time.Hour) } })
	keepReporting(t, a, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": up} })
	stopFast := keepReporting(t, fast, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": down} })
	keepReporting(t, slow, func() map[string]NodeVerdict { return map[string]NodeVerdict{"n1": down} })
	for _, m := range []*member{a, fast, slow} {
		testsupport.WaitFor(t, "every verdict on "+m.cfg.Member, func() (bool, string) {
			ok1, l1 := decided(m, "n1", "unicom", true, "unicom", 1)
			ok2, l2 := decided(m, "n1", "telecom", false, "telecom", 1)
			ok3, l3 := decided(m, "n1", "mobile", true, "mobile", 1)
			return ok1 && ok2 && ok3, l1 + l2 + l3
		})
	}
	stopFast()
	began := time.Now()
	if !poll(a.heldFor()+2*slack, func() bool { _, ok := a.Verdicts().Carriers("n1")["unicom"]; return !ok }) {
		t.Errorf("Expected the fast member's verdict forgotten within %v of its last report", a.heldFor())
	}
	if d := time.Since(began); d < a.heldFor()-a.tick()-slack {
		t.Errorf("Expected the fast member's verdict held about %v, gone after %v", a.heldFor(), d)
	}
}

// A canary rollback record that is not one, and a window's counters of
// the wrong type, are deleted and counted: the counts and the rollback go
// on instead of failing for good.
func TestHostileCanaryKeys(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, nil)
	ctx := context.Background()
	window := time.Unix(1700000000, 0)
	counts := a.canaryKey("c1", "1700000000")
	a.cfg.Client.Set(ctx, counts, "garbage", 0)
	if _, err := a.CanaryAdd(ctx, "c1", window, time.Minute, CanaryCounts{CanarySame: 1}); err == nil {
		t.Fatal("Expected the counters of the wrong type to fail this once")
	}
	got, err := a.CanaryAdd(ctx, "c1", window, time.Minute, CanaryCounts{CanarySame: 1})
	if err != nil || got.CanarySame != 1 {
		t.Errorf("Expected the counters repaired, got %+v %v", got, err)
	}
	a.cfg.Client.Set(ctx, a.canaryKey("c1", "rollback"), `{"identity":"other"}`, 0)
	if _, _, err := a.TryRollback(ctx, "c1", "test"); err == nil {
		t.Fatal("Expected the bad rollback record to fail this once")
	}
	if rb, won, err := a.TryRollback(ctx, "c1", "test"); err != nil || !won || rb.Identity != "c1" {
		t.Errorf("Expected the rollback decided after the repair, got %+v %v %v", rb, won, err)
	}
	if ok, last := repairedOf(RepairedKey, a); !ok {
		t.Errorf("Expected the repairs counted: %s", last)
	}
}
