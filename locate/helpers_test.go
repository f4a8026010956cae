package locate

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// Test database: 1.0.1.0/24 is province level, 36.0.0.0/16 only country level.
func testDB(t testing.TB) *geo.DB {
	t.Helper()
	city, asn := testsupport.WriteDBs(t, t.TempDir(), []mmdbgen.City{
		{Network: "1.0.1.0/24", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.29, Lon: 120.16, Radius: 50},
		{Network: "1.0.2.0/24", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 50},
		{Network: "1.0.3.0/24", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.2, Lon: 121.5, Radius: 50},
		{Network: "36.0.0.0/16", Country: "CN"},
		{Network: "8.8.0.0/16", Country: "US", Province: "CA", City: "Mountain View", Lat: 37.4, Lon: -122.1, Radius: 100},
		{Network: "2400:3200::/32", Country: "CN"},
	}, []mmdbgen.ASN{
		{Network: "36.0.0.0/16", ASN: 4134, Org: "CHINANET"},
		{Network: "1.0.1.0/24", ASN: 4134, Org: "CHINANET"},
	})
	db, err := geo.Open(city, asn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newLocator(t testing.TB, cfg Config) *Locator {
	t.Helper()
	return newLocatorClock(t, cfg, nil)
}

// newLocatorClock starts a Locator driven by clk (nil: the real clock).
func newLocatorClock(t testing.TB, cfg Config, clk *testsupport.Clock) *Locator {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if clk != nil {
		l.now, l.manualClock = clk.Now, true
	}
	l.Start()
	t.Cleanup(func() { l.Close() })
	return l
}

// idle waits for the background online calls to finish.
func (l *Locator) idle(t testing.TB) {
	t.Helper()
	for deadline := time.Now().Add(testsupport.WaitTimeout); time.Now().Before(deadline); {
		if l.online == nil {
			return
		}
		l.online.mu.Lock()
		n := len(l.online.inflight)
		l.online.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("Online calls still in flight after %v", testsupport.WaitTimeout)
}

// counters is a snapshot of the metrics a test looks at.
type counters map[string]float64

func snapshot() counters {
	c := counters{}
	for _, layer := range []string{"lru", "carrier_list", "db", "redis", "online"} {
		for _, res := range []string{"hit", "miss", "error"} {
			c[layer+"/"+res] = testutil.ToFloat64(GeoLookups.WithLabelValues(layer, res))
		}
	}
	for _, res := range []string{"ok", "invalid", "timeout", "error", "refused"} {
		c["online:"+res] = testutil.ToFloat64(OnlineRequests.WithLabelValues(res))
	}
	c["redis_errors"] = testutil.ToFloat64(RedisErrors)
	return c
}

// delta returns the non-zero changes since c.
func (c counters) delta() map[string]float64 {
	d := map[string]float64{}
	for k, v := range snapshot() {
		if v != c[k] {
			d[k] = v - c[k]
		}
	}
	return d
}

func gauge(g prometheus.Gauge) float64 { return testutil.ToFloat64(g) }

func redisClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func redisField(t testing.TB, c *redis.Client, addr netip.Addr) (string, bool) {
	t.Helper()
	k, f := redisKey(addr)
	v, err := c.HGet(context.Background(), k, f).Result()
	if err == redis.Nil {
		return "", false
	}
	if err != nil {
		t.Fatalf("HGET %s %s: %v", k, f, err)
	}
	return v, true
}
