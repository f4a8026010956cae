package locate

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/testredis"

	"github.com/redis/go-redis/v9"
)

// failoverSlack is how long after a replica's promotion the clients may
// take to use it: the second, and room for a loaded machine.
const failoverSlack = time.Second

// The location cache uses a Redis Cluster's promoted replica within a
// second of the promotion, though queries kept hitting the dead master.
func TestRedisClusterFailover(t *testing.T) {
	rc := testredis.StartCluster(t, 3, 1)
	a := netip.MustParseAddr("36.0.200.1")
	k, f := redisKey(a)
	slot := rc.Slot(k)
	seeded := geo.Location{Country: "CN", Province: "HB", Bits: 24}
	master := redis.NewClient(&redis.Options{Addr: rc.MasterOf(slot).Addr()})
	defer master.Close()
	if err := master.HSet(ctx, k, f, encode(&seeded)).Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	if n, err := master.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d %v", n, err)
	}
	l := newLocator(t, Config{DB: testDB(t), Redis: &RedisConfig{Addrs: rc.Addrs(), Timeout: 250 * time.Millisecond}})
	checkFailover(t, l, a, func() (time.Time, time.Time) { return rc.Failover(slot, 30*time.Second) })
}

// Likewise through Sentinels.
func TestRedisSentinelFailover(t *testing.T) {
	s := testredis.StartSentinel(t, 1, 3)
	a := netip.MustParseAddr("36.0.200.1")
	k, f := redisKey(a)
	seeded := geo.Location{Country: "CN", Province: "HB", Bits: 24}
	master := redis.NewClient(&redis.Options{Addr: s.Master.Addr()})
	defer master.Close()
	if err := master.HSet(ctx, k, f, encode(&seeded)).Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	if n, err := master.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d %v", n, err)
	}
	l := newLocator(t, Config{DB: testDB(t), Redis: &RedisConfig{Addrs: s.Addrs(), MasterName: testredis.SentinelMaster, Timeout: 250 * time.Millisecond}})
	checkFailover(t, l, a, func() (time.Time, time.Time) { return s.Failover(30 * time.Second) })
}

// checkFailover checks that l reads a's location from Redis, calls
// failover while queries go on, and that l reads it again within
// failoverSlack of the promotion.
func checkFailover(t *testing.T, l *Locator, a netip.Addr, failover func() (killed, promoted time.Time)) {
	t.Helper()
	fromRedis := func() bool {
		l.cache.purge()
		loc := l.Locate(ctx, a).Location
		return loc.Source == geo.SourceRedis && loc.Province == "HB"
	}
	if !fromRedis() {
		t.Fatal("Expected the location from Redis before the failover")
	}
	// Queries go on during the failover, as they would in production.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				l.Locate(context.Background(), netip.MustParseAddr("36.0.201.1"))
			}
		}
	}()
	killed, promoted := failover()
	var back time.Time
	for deadline := promoted.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fromRedis() {
			back = time.Now()
			break
		}
	}
	close(stop)
	<-done
	if back.IsZero() {
		t.Fatal("The location cache did not use the promoted replica within 30s")
	}
	t.Logf("Failover %v, the cache back %v after the promotion", promoted.Sub(killed), back.Sub(promoted))
	if d := back.Sub(promoted); d > failoverSlack {
		t.Errorf("The cache used the promoted replica %v after its promotion, want at most %v", d, failoverSlack)
	}
}
