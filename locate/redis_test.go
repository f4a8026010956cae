package locate

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

func TestRedisKey(t *testing.T) {
	tests := []struct{ addr, key, field string }{
		{"223.5.5.5", "gslb:geo:v1:223.5", "5"},
		{"1.2.3.4", "gslb:geo:v1:1.2", "3"},
		{"2001:db8:85a3::1", "gslb:geo:v1:2001:db8", "85a3"},
		{"2400:3200:0:1::2", "gslb:geo:v1:2400:3200", "0"},
	}
	for _, tc := range tests {
		k, f := redisKey(netip.MustParseAddr(tc.addr))
		if k != tc.key || f != tc.field {
			t.Errorf("%s: got %s %s, want %s %s", tc.addr, k, f, tc.key, tc.field)
		}
	}
}

func TestEncoding(t *testing.T) {
	full := geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "Hang|zhou", ISP: "telecom",
		ASN: 4134, HasCoords: true, Lat: 30.2741, Lon: 120.1551, Radius: 20, Bits: 24}
	got, err := decode(encode(&full))
	full.City = "Hang zhou"
	if err != nil || got != full {
		t.Errorf("Round trip: got %+v (%v), want %+v", got, err, full)
	}
	bare := geo.Location{Country: "US", Bits: 48}
	if got, err := decode(encode(&bare)); err != nil || got != bare {
		t.Errorf("Round trip: got %+v (%v), want %+v", got, err, bare)
	}
	for _, s := range []string{
		"", "garbage", "2|CN|AS|ZJ|||0|||0|24", "1||AS|ZJ|||0|||0|24", "1|CN|AS|ZJ|||x|||0|24",
		"1|CN|AS|ZJ|||0|95|1|0|24", "1|CN|AS|ZJ|||0|1||0|24", "1|CN|AS|ZJ|||0|||0|200", "1|CN|AS|ZJ|||0|||0",
	} {
		if _, err := decode(s); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", s)
		}
	}
}

// A dead Redis fails no query, the breaker stops asking it, and a restarted
// Redis is used again without help.
func TestRedisDeadThenRestarted(t *testing.T) {
	rs := testredis.Start(t)
	clk := testsupport.NewClock()
	l := newLocatorClock(t, Config{DB: testDB(t), Redis: &RedisConfig{Addrs: []string{rs.Addr()}, Timeout: 2 * time.Second}}, clk)
	n := 0
	locate := func() geo.Location {
		n++
		return l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", n))).Location
	}
	if loc := locate(); loc.Country != "CN" {
		t.Fatalf("Got %+v with Redis up, want the country", loc)
	}
	rs.Stop()
	before := snapshot()
	for range 10 {
		if loc := locate(); loc.Country != "CN" || loc.Source != geo.SourceDB {
			t.Fatalf("Got %+v with Redis down, want the database's answer", loc)
		}
	}
	if d := before.delta(); d["redis_errors"] != redisBreakerFailures || d["redis/error"] != redisBreakerFailures {
		t.Errorf("Got deltas %v, want %d Redis errors then the breaker skipping it", d, redisBreakerFailures)
	}

	rs.Restart()
	seeded := geo.Location{Country: "CN", Province: "HB", Bits: 24}
	a := netip.MustParseAddr("36.0.200.1")
	k, f := redisKey(a)
	if err := redisClient(t, rs.Addr()).HSet(ctx, k, f, encode(&seeded)).Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	clk.Add(redisBreakerWindow + time.Second)
	// Pooled connections died with the old server: go-redis drops them and
	// redials. Bounded: a handful of attempts, each behind the breaker.
	var loc geo.Location
	for i := 0; i < 20 && loc.Source != geo.SourceRedis; i++ {
		l.cache.purge()
		loc = l.Locate(ctx, a).Location
		clk.Add(redisBreakerWindow + time.Second)
	}
	if loc.Source != geo.SourceRedis || loc.Province != "HB" {
		t.Errorf("Got %+v after the restart, want province HB from Redis", loc)
	}
}

// A stalled Redis costs a query at most the timeout.
func TestRedisStalled(t *testing.T) {
	rs := testredis.Start(t)
	const timeout = 30 * time.Millisecond
	l := newLocator(t, Config{DB: testDB(t), Redis: &RedisConfig{Addrs: []string{rs.Addr()}, Timeout: timeout}})
	l.Locate(ctx, netip.MustParseAddr("36.0.1.1")) // a pooled connection
	rs.Pause()
	defer rs.Resume()
	before := snapshot()
	start := time.Now()
	loc := l.Locate(ctx, netip.MustParseAddr("36.0.2.1"))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Locate took %v with a stalled Redis, want about %v", took, timeout)
	}
	if loc.Country != "CN" || loc.Source != geo.SourceDB {
		t.Errorf("Got %+v, want the database's answer", loc)
	}
	if d := before.delta(); d["redis_errors"] != 1 {
		t.Errorf("Got deltas %v, want one Redis error", d)
	}
}

func TestRedisConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		cfg    RedisConfig
		hasErr bool
	}{
		{"defaults", RedisConfig{Addrs: []string{"127.0.0.1:6379"}}, false},
		{"cluster", RedisConfig{Addrs: []string{"a:1", "b:2"}}, false},
		{"sentinel with db", RedisConfig{Addrs: []string{"a:1", "b:2"}, MasterName: "m", DB: 2}, false},
		{"no address", RedisConfig{}, true},
		{"no port", RedisConfig{Addrs: []string{"localhost"}}, true},
		{"negative db", RedisConfig{Addrs: []string{"a:1"}, DB: -1}, true},
		{"cluster with db", RedisConfig{Addrs: []string{"a:1", "b:2"}, DB: 1}, true},
		{"negative timeout", RedisConfig{Addrs: []string{"a:1"}, Timeout: -1}, true},
		{"tiny ttl", RedisConfig{Addrs: []string{"a:1"}, TTL: time.Millisecond}, true},
	}
	for _, tc := range tests {
		cfg := tc.cfg.WithDefaults()
		err := cfg.Validate()
		if (err != nil) != tc.hasErr {
			t.Errorf("%s: got error %v, want error %v", tc.name, err, tc.hasErr)
		}
		if err == nil && (cfg.Timeout != DefaultRedisTimeout || cfg.TTL != DefaultRedisTTL) {
			t.Errorf("%s: defaults not filled: %+v", tc.name, cfg)
		}
	}
}

// A query whose context is cancelled is not held against Redis.
func TestRedisCancelledQuery(t *testing.T) {
	rs := testredis.Start(t)
	l := newLocator(t, Config{DB: testDB(t), Redis: &RedisConfig{Addrs: []string{rs.Addr()}}})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := snapshot()
	for i := range redisBreakerFailures + 1 {
		if loc := l.Locate(cctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", i))); loc.Country != "CN" {
			t.Fatalf("Got %+v, want the database's answer", loc)
		}
	}
	if d := before.delta(); d["redis_errors"] != 0 || l.redis.breaker.isOpen() {
		t.Errorf("Got deltas %v, breaker open %v; want no Redis errors", d, l.redis.breaker.isOpen())
	}
}
