package locate

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

var ctx = context.Background()

func TestLayerOrder(t *testing.T) {
	db := testDB(t)
	rs := testredis.Start(t)
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	rcli := redisClient(t, rs.Addr())
	// 36.0.7.0/24 is already known to the shared cache.
	seeded := geo.Location{Country: "CN", Continent: "AS", Province: "GD", City: "Guangzhou", ISP: "telecom", Bits: 24}
	k, f := redisKey(netip.MustParseAddr("36.0.7.1"))
	if err := rcli.HSet(ctx, k, f, encode(&seeded)).Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	l := newLocator(t, Config{DB: db, Redis: &RedisConfig{Addrs: []string{rs.Addr()}, Timeout: time.Second},
		Online: &OnlineConfig{URL: api.URL()}})

	tests := []struct {
		addr     string
		source   geo.Source
		province string
		special  bool
		delta    map[string]float64
	}{
		{"10.1.2.3", geo.SourceNone, "", true, map[string]float64{}},
		{"1.0.1.5", geo.SourceDB, "ZJ", false, map[string]float64{"lru/miss": 1, "db/hit": 1}},
		{"1.0.1.200", geo.SourceCache, "ZJ", false, map[string]float64{"lru/hit": 1}},
		{"::ffff:1.0.1.9", geo.SourceCache, "ZJ", false, map[string]float64{"lru/hit": 1}},
		{"36.0.7.9", geo.SourceRedis, "GD", false, map[string]float64{"lru/miss": 1, "db/miss": 1, "redis/hit": 1}},
		{"36.0.7.10", geo.SourceRedis, "GD", false, map[string]float64{"lru/hit": 1}},
		// Nothing in Redis: answered at country level now, refined online.
		{"36.0.5.1", geo.SourceDB, "", false, map[string]float64{"lru/miss": 1, "db/miss": 1, "redis/miss": 1,
			"online/hit": 1, "online:ok": 1}},
		{"36.0.5.2", geo.SourceOnline, "ZJ", false, map[string]float64{"lru/hit": 1}},
		{"2400:3200::1", geo.SourceDB, "", false, map[string]float64{"lru/miss": 1, "db/miss": 1, "redis/miss": 1,
			"online/hit": 1, "online:ok": 1}},
		{"2400:3200:0:1::2", geo.SourceOnline, "ZJ", false, map[string]float64{"lru/hit": 1}}, // same /48
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			before := snapshot()
			loc := l.Locate(ctx, netip.MustParseAddr(tc.addr))
			l.idle(t)
			if loc.Source != tc.source || loc.Province != tc.province || loc.Special != tc.special {
				t.Errorf("Got source %v province %q special %v, want %v %q %v",
					loc.Source, loc.Province, loc.Special, tc.source, tc.province, tc.special)
			}
			if d := before.delta(); !maps.Equal(d, tc.delta) {
				t.Errorf("Got metric deltas %v, want %v", d, tc.delta)
			}
		})
	}
	if v, ok := redisField(t, rcli, netip.MustParseAddr("36.0.5.1")); !ok {
		t.Errorf("Online result was not written to Redis")
	} else if loc, err := decode(v); err != nil || loc.Province != "ZJ" || loc.ISP != "telecom" {
		t.Errorf("Redis holds %q (%v), want province ZJ, isp telecom", v, err)
	}
	ttl, err := rcli.TTL(ctx, "gslb:geo:v1:36.0").Result()
	if err != nil || ttl <= 23*time.Hour {
		t.Errorf("Key TTL is %v (%v), want about 24h", ttl, err)
	}
}

func TestCacheTTL(t *testing.T) {
	clk := testsupport.NewClock()
	l := newLocatorClock(t, Config{DB: testDB(t), CacheTTL: time.Hour}, clk)
	tests := []struct {
		addr string
		ttl  time.Duration
	}{
		{"1.0.1.1", time.Hour},      // province: CacheTTL
		{"36.0.1.1", NoProvinceTTL}, // country level: short
		{"9.9.9.9", NoProvinceTTL},  // unknown: short
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			l.cache.purge()
			start := clk.Now()
			a := netip.MustParseAddr(tc.addr)
			if loc := l.Locate(ctx, a); loc.Source == geo.SourceCache {
				t.Fatalf("First lookup came from the cache")
			}
			clk.Add(tc.ttl - time.Second)
			if loc := l.Locate(ctx, a); loc.Source != geo.SourceCache {
				t.Errorf("Got source %v before the TTL, want lru", loc.Source)
			}
			clk.Add(2 * time.Second)
			if loc := l.Locate(ctx, a); loc.Source == geo.SourceCache {
				t.Errorf("Got a cache hit after the TTL")
			}
			clk.Add(-clk.Now().Sub(start))
		})
	}
}

func TestCacheBound(t *testing.T) {
	g0 := gauge(CacheEntries)
	l := newLocator(t, Config{DB: testDB(t), CacheSize: 2})
	a, b, c := netip.MustParseAddr("1.0.1.1"), netip.MustParseAddr("1.0.2.1"), netip.MustParseAddr("1.0.3.1")
	for _, x := range []netip.Addr{a, b, c} {
		l.Locate(ctx, x)
	}
	if n := l.cache.len(); n != 2 {
		t.Errorf("Cache holds %d entries, want 2", n)
	}
	if g := gauge(CacheEntries) - g0; g != 2 {
		t.Errorf("Cache entries gauge moved by %v, want 2", g)
	}
	tests := []struct {
		addr netip.Addr
		src  geo.Source
	}{{c, geo.SourceCache}, {b, geo.SourceCache}, {a, geo.SourceDB}}
	for _, tc := range tests {
		if loc := l.Locate(ctx, tc.addr); loc.Source != tc.src {
			t.Errorf("%s: got source %v, want %v", tc.addr, loc.Source, tc.src)
		}
	}
	l.Close()
	if g := gauge(CacheEntries) - g0; g != 0 {
		t.Errorf("Cache entries gauge is %v above its start after Close, want 0", g)
	}
}

func TestCacheHitAllocs(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	a := netip.MustParseAddr("1.0.1.1")
	l.Locate(ctx, a)
	if n := testing.AllocsPerRun(1000, func() { l.Locate(ctx, a) }); n != 0 {
		t.Errorf("A cache hit allocates %v times, want 0", n)
	}
}

func TestSetDBPurges(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	a := netip.MustParseAddr("1.0.1.1")
	l.Locate(ctx, a)
	l.SetDB(nil)
	if loc := l.Locate(ctx, a); loc.Source != geo.SourceNone || loc.Country != "" {
		t.Errorf("After SetDB(nil) got %+v, want nothing known", loc)
	}
}

func TestOnlineValidation(t *testing.T) {
	db := testDB(t)
	tests := []struct {
		name string
		mode int32
	}{
		{"wrong range", testsupport.APIWrongRange},
		{"default province for everything", testsupport.APIDefault},
		{"bad coordinates", testsupport.APIBadCoords},
		{"zero coordinates", testsupport.APIZeroCoords},
		{"missing country", testsupport.APINoCountry},
		{"country disagrees with database", testsupport.APIWrongCountry},
		{"unknown province", testsupport.APIBadProvince},
		{"garbage", testsupport.APIGarbage},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := testredis.Start(t)
			api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
			api.Mode.Store(tc.mode)
			l := newLocator(t, Config{DB: db, Redis: &RedisConfig{Addrs: []string{rs.Addr()}, Timeout: time.Second},
				Online: &OnlineConfig{URL: api.URL()}})
			a := netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", 100+i))
			before := snapshot()
			l.Locate(ctx, a)
			l.idle(t)
			if d := before.delta(); d["online:invalid"] != 1 || d["online:ok"] != 0 {
				t.Errorf("Got deltas %v, want one invalid answer", d)
			}
			if loc := l.Locate(ctx, a); loc.Province != "" {
				t.Errorf("Rejected answer reached the cache: province %q", loc.Province)
			}
			if v, ok := redisField(t, redisClient(t, rs.Addr()), a); ok {
				t.Errorf("Rejected answer reached Redis: %q", v)
			}
		})
	}
}

func TestOnlineBreaker(t *testing.T) {
	clk := testsupport.NewClock()
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APIFail)
	l := newLocatorClock(t, Config{DB: testDB(t),
		Online: &OnlineConfig{URL: api.URL(), BreakerFailures: 3, BreakerWindow: 50 * time.Millisecond}}, clk)
	n := 0
	locate := func() {
		n++
		l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", n)))
		l.idle(t)
	}
	before := snapshot()
	for range 3 {
		locate()
	}
	if gauge(OnlineBreakerOpen) != 1 {
		t.Fatalf("Breaker is not open after 3 failures")
	}
	locate()
	if c := api.Calls.Load(); c != 3 {
		t.Errorf("API called %d times, want 3 (open breaker must not call)", c)
	}
	if d := before.delta(); d["online:error"] != 3 || d["online:refused"] != 1 {
		t.Errorf("Got deltas %v, want 3 errors and 1 refusal", d)
	}

	// Window over, trial fails: open again.
	clk.Add(60 * time.Millisecond)
	locate()
	if c := api.Calls.Load(); c != 4 || gauge(OnlineBreakerOpen) != 1 {
		t.Errorf("After a failed trial: %d calls, open=%v; want 4 calls, open", c, gauge(OnlineBreakerOpen))
	}
	locate()
	if c := api.Calls.Load(); c != 4 {
		t.Errorf("API called %d times while re-opened, want 4", c)
	}

	// Window over, trial succeeds: closed.
	api.Mode.Store(testsupport.APIGood)
	clk.Add(60 * time.Millisecond)
	locate()
	if gauge(OnlineBreakerOpen) != 0 {
		t.Errorf("Breaker still open after a good trial call")
	}
	locate()
	if c := api.Calls.Load(); c != 6 {
		t.Errorf("API called %d times after closing, want 6", c)
	}
}

func TestOnlineTimeout(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APISlow)
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), Timeout: 30 * time.Millisecond}})
	before := snapshot()
	if loc := l.Locate(ctx, netip.MustParseAddr("36.0.1.1")); loc.Country != "CN" || loc.Province != "" {
		t.Errorf("Got %+v, want the country-level answer at once", loc)
	}
	l.idle(t)
	if d := before.delta(); d["online:timeout"] != 1 {
		t.Errorf("Got deltas %v, want one timeout", d)
	}
}

func TestOnlineSingleflight(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APISlow)
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), Timeout: 5 * time.Second}})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			// Distinct cache misses would be hidden by the cache: purge races are fine here.
			l.cache.purge()
			l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.9.%d", i+1)))
		})
	}
	wg.Wait()
	api.Unblock()
	l.idle(t)
	if c := api.Calls.Load(); c != 1 {
		t.Errorf("API called %d times for one /24, want 1", c)
	}
	if loc := l.Locate(ctx, netip.MustParseAddr("36.0.9.99")); loc.Province != "ZJ" {
		t.Errorf("Got province %q after the online answer, want ZJ", loc.Province)
	}
}

func TestOnlineMaxQPS(t *testing.T) {
	clk := testsupport.NewClock()
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	l := newLocatorClock(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), MaxQPS: 1}}, clk)
	before := snapshot()
	for i := range 3 {
		l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", 20+i)))
		l.idle(t)
	}
	if d := before.delta(); d["online:ok"] != 1 || d["online:refused"] != 2 {
		t.Errorf("Got deltas %v, want 1 ok and 2 refused", d)
	}
	clk.Add(time.Second)
	l.Locate(ctx, netip.MustParseAddr("36.0.30.1"))
	l.idle(t)
	if c := api.Calls.Load(); c != 2 {
		t.Errorf("API called %d times, want 2 after a second", c)
	}
}

func TestCloseCancelsOnline(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APISlow)
	l, err := New(Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), Timeout: time.Minute}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	l.Start()
	l.Locate(ctx, netip.MustParseAddr("36.0.1.1"))
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Close did not cancel the in-flight online call")
	}
	before := api.Calls.Load()
	l.cache.purge()
	l.Locate(ctx, netip.MustParseAddr("36.0.2.1"))
	if api.Calls.Load() != before {
		t.Errorf("Online call started after Close")
	}
}

func TestSharingThroughRedis(t *testing.T) {
	db := testDB(t)
	rs := testredis.Start(t)
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	rc := &RedisConfig{Addrs: []string{rs.Addr()}, Timeout: time.Second}
	// Locators of one cache size share the process's cache; B stands for
	// another process, so it gets a cache of its own.
	a := newLocator(t, Config{DB: db, Redis: rc, Online: &OnlineConfig{URL: api.URL()}})
	b := newLocator(t, Config{DB: db, Redis: rc, CacheSize: 1000})
	a.Locate(ctx, netip.MustParseAddr("36.0.44.1"))
	a.idle(t)
	la := a.Locate(ctx, netip.MustParseAddr("36.0.44.2"))
	lb := b.Locate(ctx, netip.MustParseAddr("36.0.44.200"))
	if la.Province == "" || lb.Source != geo.SourceRedis || lb.Province != la.Province || lb.City != la.City {
		t.Errorf("A learned %q/%q; B got source %v %q/%q, want redis with the same province",
			la.Province, la.City, lb.Source, lb.Province, lb.City)
	}
}

func TestOnlineInflightBound(t *testing.T) {
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	api.Mode.Store(testsupport.APISlow)
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL(), MaxQPS: 1000, Timeout: 5 * time.Second}})
	l.online.maxInflight = 3
	before := snapshot()
	for i := range 10 {
		l.Locate(ctx, netip.MustParseAddr(fmt.Sprintf("36.0.%d.1", 50+i)))
	}
	l.online.mu.Lock()
	n := len(l.online.inflight)
	l.online.mu.Unlock()
	if n != 3 {
		t.Errorf("Got %d calls in flight, want the bound of 3", n)
	}
	if d := before.delta(); d["online:refused"] != 7 {
		t.Errorf("Got deltas %v, want 7 refusals", d)
	}
	api.Unblock()
	l.idle(t)
}

// A locator that replaces another (a Corefile reload) starts with its
// cache; one with other databases does not read the other's entries.
func TestCacheSurvivesReplacement(t *testing.T) {
	db := testDB(t)
	old := newLocator(t, Config{DB: db, CacheSize: 777})
	a := netip.MustParseAddr("1.0.1.1")
	old.Locate(ctx, a)
	cur := newLocator(t, Config{DB: db, CacheSize: 777})
	old.Close()
	if loc := cur.Locate(ctx, a); loc.Source != geo.SourceCache || loc.Province != "ZJ" {
		t.Errorf("After the replacement got %+v, want a cache hit for ZJ", loc)
	}
	other := newLocator(t, Config{DB: testDB2(t), CacheSize: 777})
	if loc := other.Locate(ctx, a); loc.Source == geo.SourceCache || loc.Province != "HB" {
		t.Errorf("With other databases got %+v, want HB from the database", loc)
	}
}

// testDB2 places 1.0.1.0/24 in Hubei.
func testDB2(t testing.TB) *geo.DB {
	t.Helper()
	city := filepath.Join(t.TempDir(), "city.mmdb")
	if err := mmdbgen.WriteCity(city, []mmdbgen.City{{Network: "1.0.1.0/24", Country: "CN", Province: "HB", City: "Wuhan", Lat: 30.6, Lon: 114.3}}); err != nil {
		t.Fatal(err)
	}
	db, err := geo.Open(city, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestLearnUnderOldContent: what a lookup that started before a database
// swap learns is cached under the old content, so the next lookup asks
// the new database instead of taking the old answer as current.
func TestLearnUnderOldContent(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	a := netip.MustParseAddr("1.0.1.1")
	q := &Query{Addr: a, Key: KeyOf(a), tag: l.tag.Load()}
	l.dbs.Locate(ctx, q) // the old database's answer, found before the swap
	if q.Loc.Country == "" {
		t.Fatalf("Expected the test database to place %s", a)
	}
	l.SetDB(nil)
	(&cacheSource{l}).Learn(ctx, q, true) // learnt after it
	if loc := l.Locate(ctx, a); loc.Country != "" {
		t.Errorf("After the swap got the old answer %+v, want nothing known", loc)
	}
}
