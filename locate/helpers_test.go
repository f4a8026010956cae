package locate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
)

// Test database: 1.0.1.0/24 is province level, 36.0.0.0/16 only country level.
func testDB(t testing.TB) *geo.DB {
	t.Helper()
	dir := t.TempDir()
	city := filepath.Join(dir, "city.mmdb")
	asn := filepath.Join(dir, "asn.mmdb")
	err := mmdbgen.WriteCity(city, []mmdbgen.City{
		{Network: "1.0.1.0/24", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.29, Lon: 120.16, Radius: 50},
		{Network: "1.0.2.0/24", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 50},
		{Network: "1.0.3.0/24", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.2, Lon: 121.5, Radius: 50},
		{Network: "36.0.0.0/16", Country: "CN"},
		{Network: "8.8.0.0/16", Country: "US", Province: "CA", City: "Mountain View", Lat: 37.4, Lon: -122.1, Radius: 100},
		{Network: "2400:3200::/32", Country: "CN"},
	})
	if err != nil {
		t.Fatalf("WriteCity: %v", err)
	}
	err = mmdbgen.WriteASN(asn, []mmdbgen.ASN{
		{Network: "36.0.0.0/16", ASN: 4134, Org: "CHINANET"},
		{Network: "1.0.1.0/24", ASN: 4134, Org: "CHINANET"},
	})
	if err != nil {
		t.Fatalf("WriteASN: %v", err)
	}
	db, err := geo.Open(city, asn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Modes of the fake online API.
const (
	apiGood         = iota
	apiSlow         // blocks until release is closed or the request is cancelled
	apiFail         // HTTP 500
	apiGarbage      // not JSON
	apiWrongRange   // network that does not contain the address
	apiDefault      // one fixed answer for every address
	apiBadCoords    // latitude 95
	apiZeroCoords   // 0,0
	apiNoCountry    // country missing
	apiWrongCountry // disagrees with the local database
	apiBadProvince  // a province that does not exist
)

type fakeAPI struct {
	srv     *httptest.Server
	mode    atomic.Int32
	calls   atomic.Int32
	mu      sync.Mutex
	release chan struct{}
}

func newFakeAPI(t testing.TB) *fakeAPI {
	a := &fakeAPI{release: make(chan struct{})}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	t.Cleanup(a.unblock)
	return a
}

func (a *fakeAPI) url() string { return a.srv.URL + "/v1/{ip}" }

func (a *fakeAPI) unblock() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.release:
	default:
		close(a.release)
	}
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	ip, err := netip.ParseAddr(strings.TrimPrefix(r.URL.Path, "/v1/"))
	if err != nil {
		http.Error(w, "bad ip", http.StatusBadRequest)
		return
	}
	p, _ := ip.Prefix(24)
	ans := map[string]any{"ip": ip.String(), "network": p.String(), "country": "CN",
		"province": "浙江", "city": "Hangzhou", "isp": "电信", "lat": 30.2, "lon": 120.1}
	switch a.mode.Load() {
	case apiSlow:
		a.mu.Lock()
		ch := a.release
		a.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	case apiFail:
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	case apiGarbage:
		w.Write([]byte("<html>rate limited</html>"))
		return
	case apiWrongRange:
		ans["network"] = "1.2.3.0/24"
		delete(ans, "ip")
	case apiDefault:
		ans = map[string]any{"ip": "1.2.3.4", "country": "CN", "province": "BJ", "lat": 39.9, "lon": 116.4}
	case apiBadCoords:
		ans["lat"] = 95.0
	case apiZeroCoords:
		ans["lat"], ans["lon"] = 0.0, 0.0
	case apiNoCountry:
		delete(ans, "country")
	case apiWrongCountry:
		ans["country"], ans["province"] = "US", "CA"
	case apiBadProvince:
		ans["province"] = "Atlantis"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}

// fakeClock is a manual clock for TTLs, breakers and the rate limiter.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1700000000, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newLocator(t testing.TB, cfg Config) *Locator {
	t.Helper()
	return newLocatorClock(t, cfg, nil)
}

// newLocatorClock starts a Locator driven by clk (nil: the real clock).
func newLocatorClock(t testing.TB, cfg Config, clk *fakeClock) *Locator {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if clk != nil {
		l.now, l.manualClock = clk.now, true
	}
	l.Start()
	t.Cleanup(func() { l.Close() })
	return l
}

// idle waits for the background online calls to finish.
func (l *Locator) idle(t testing.TB) {
	t.Helper()
	for range 5000 {
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
	t.Fatalf("Online calls still in flight after 5s")
}

// counters is a snapshot of the metrics a test looks at.
type counters map[string]float64

func snapshot() counters {
	c := counters{}
	for _, layer := range []string{"lru", "db", "redis", "online"} {
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
