package locate

import (
	"context"
	"encoding/json"
	"fmt"
	golog "log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/offheap"
	"github.com/gslbdns/gslb/internal/testsupport"

	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// waitTable waits for l's table of its databases.
func waitTable(t *testing.T, l *Locator) *netTable {
	t.Helper()
	var tb *netTable
	testsupport.WaitFor(t, "the precomputed table", func() (bool, string) {
		tb = l.dbs.pre.Load()
		return tb != nil && tb.db == l.DB() && tb.carriers == l.carriers.Load(), fmt.Sprint(tb != nil)
	})
	return tb
}

// sameAnswer: a and b place the client alike, and for as wide a scope. A
// cached answer says it came from the cache; the table's, from the
// databases.
func sameAnswer(a, b Result) bool {
	if a.Source == geo.SourceCache || b.Source == geo.SourceCache {
		a.Source, b.Source = geo.SourceCache, geo.SourceCache
	}
	return a.Location == b.Location && a.Scope == b.Scope
}

// precomputeAddrs are the test database's networks, their edges, and
// random addresses.
func precomputeAddrs() []netip.Addr {
	var out []netip.Addr
	for _, s := range []string{"1.0.0.255", "1.0.1.0", "1.0.1.77", "1.0.1.255", "1.0.2.0", "1.0.3.9", "1.0.4.0",
		"36.0.0.1", "36.0.255.255", "36.1.0.0", "8.8.8.8", "10.1.2.3", "223.255.255.255", "255.255.255.255", "0.0.0.1"} {
		out = append(out, netip.MustParseAddr(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		out = append(out, netip.AddrFrom4([4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}))
	}
	return out
}

// TestPrecomputedIsExact: with the table, every address is placed as the
// databases place it without one, and a /24 never seen is answered from
// the table (its counter says so), not by a walk.
func TestPrecomputedIsExact(t *testing.T) {
	db := testDB(t)
	// Cache sizes of their own: locators of one size share a cache.
	pre := newLocator(t, Config{DB: db, CacheSize: 4099, Precompute: &PrecomputeConfig{}})
	plain := newLocator(t, Config{DB: db, CacheSize: 4097})
	tb := waitTable(t, pre)
	if tb.bytes() <= 0 || tb.d.ranges() == 0 || testutil.ToFloat64(PrecomputedRanges) == 0 || pre.PrecomputedUpTo().IsValid() {
		t.Fatalf("Table of %d ranges, %d bytes; gauge %v", tb.d.ranges(), tb.bytes(), testutil.ToFloat64(PrecomputedRanges))
	}
	ctx := context.Background()
	hits := testutil.ToFloat64(precomputedHit)
	fresh := 0
	for _, a := range precomputeAddrs() {
		if _, special := geo.Special(a); !special {
			fresh++
		}
		got, want := pre.Locate(ctx, a), plain.Locate(ctx, a)
		if !sameAnswer(got, want) {
			t.Fatalf("%s: precomputed %+v /%d\nwalked %+v /%d", a, got.Location, got.Scope, want.Location, want.Scope)
		}
	}
	// A fresh /24 of a network already in the table: a lookup.
	if d := testutil.ToFloat64(precomputedHit) - hits; d < float64(fresh)/2 {
		t.Errorf("%v of %d fresh /24s answered from the table", d, fresh)
	}
}

// TestPrecomputeBudget: a budget too small for the whole space keeps the
// part walked, and the rest is walked per query, as exactly.
func TestPrecomputeBudget(t *testing.T) {
	dir := t.TempDir()
	var cities []mmdbgen.City
	for i := range 600 { // more networks than the directory and 2 KiB hold
		cities = append(cities, mmdbgen.City{Network: fmt.Sprintf("1.%d.%d.0/24", i/128, 2*(i%128)), Country: "CN", Province: []string{"ZJ", "BJ", "SH"}[i%3]})
	}
	city, _ := testsupport.WriteDBs(t, dir, cities, nil)
	db, err := geo.Open(city, "")
	if err != nil {
		t.Fatal(err)
	}
	var logs testsupport.LogBuffer
	golog.SetOutput(&logs)
	defer clog.Discard()
	pre := newLocator(t, Config{DB: db, CacheSize: 4101, Precompute: &PrecomputeConfig{MaxBytes: dirBytes + 2<<10}})
	plain := newLocator(t, Config{DB: db, CacheSize: 4103})
	tb := waitTable(t, pre)
	// The walk says where it stopped and what budget would cover it.
	if out := logs.String(); !strings.Contains(out, "[WARNING] plugin/gslb: precompute: the walk of IPv4 stopped at "+pre.PrecomputedUpTo().String()) ||
		!strings.Contains(out, "would cover it all") {
		t.Errorf("No warning of the budget: %q", out)
	}
	if n := tb.d.val[len(tb.d.val)-1]; n != noVal || tb.d.ranges() > 600 || !pre.PrecomputedUpTo().IsValid() {
		t.Fatalf("A budget of 2 KiB past the directory: %d ranges, the last %d (want a partial table)", tb.d.ranges(), n)
	}
	ctx := context.Background()
	hits, misses := testutil.ToFloat64(precomputedHit), testutil.ToFloat64(precomputedMiss)
	for i := range 1200 {
		a := netip.AddrFrom4([4]byte{1, byte(i / 256), byte(i), byte(i * 7)})
		got, want := pre.Locate(ctx, a), plain.Locate(ctx, a)
		if got.Location != want.Location || got.Scope != want.Scope {
			t.Fatalf("%s: %+v, want %+v", a, got.Location, want.Location)
		}
	}
	if testutil.ToFloat64(precomputedHit) == hits || testutil.ToFloat64(precomputedMiss) == misses {
		t.Errorf("Not partial: %v hits, %v misses", testutil.ToFloat64(precomputedHit)-hits, testutil.ToFloat64(precomputedMiss)-misses)
	}
}

// TestPrecomputeFollowsReloads: a database reload swaps the databases at
// once and builds their table after; a carrier table change renormalizes
// it.
func TestPrecomputeFollowsReloads(t *testing.T) {
	write, _, _, files, db := provinceDBs(t)
	l := newLocator(t, Config{DB: db, DBFiles: files, CacheSize: 4105, Precompute: &PrecomputeConfig{}})
	old := waitTable(t, l)
	ctx := context.Background()
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.9")); r.Province != "ZJ" || r.ISP != "telecom" {
		t.Fatalf("Before the reload: %+v", r.Location)
	}
	write("BJ")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	// The new databases answer at once, before their table is built.
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.10")); r.Province != "BJ" {
		t.Errorf("Right after the reload: %+v, want BJ", r.Location)
	}
	if tb := waitTable(t, l); tb == old {
		t.Fatalf("After the reload the table is the old one")
	}
	hits := testutil.ToFloat64(precomputedHit)
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.11")); r.Province != "BJ" {
		t.Errorf("After the reload: %+v, want BJ", r.Location)
	}
	if testutil.ToFloat64(precomputedHit) != hits+1 {
		t.Errorf("The query after the new table was not answered from it")
	}
	// The old table's directory is unmapped once nothing holds the table.
	dir := old.d.dir
	if offheap.Mapped(dir) > 0 {
		old = nil
		testsupport.WaitFor(t, "the old table unmapped", func() (bool, string) {
			runtime.GC()
			return offheap.Mapped(dir) == 0, fmt.Sprint(offheap.Mapped(dir))
		})
	} else if runtime.GOOS == "linux" {
		t.Errorf("The table's directory is not off the heap")
	}

	carriers, err := geo.DefaultCarriers().Extend(map[uint32]string{4134: "othernet"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.SetCarriers(carriers)
	waitTable(t, l)
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.2.1")); r.ISP != "" {
		t.Errorf("Unknown network: %+v", r.Location)
	}
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.11")); r.ISP != "othernet" {
		t.Errorf("After the carrier change: ISP %q, want othernet", r.ISP)
	}
}

// TestPlaced: the table's clients, each once, hold what every address is
// placed at (reduced to what a decision reads), the most addresses first;
// placedTop cuts the same order.
func TestPlaced(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t), CacheSize: 4107, Precompute: &PrecomputeConfig{}})
	waitTable(t, l)
	places := l.Placed()
	if places.Len() == 0 {
		t.Fatal("Placed: none")
	}
	locs := make([]geo.Location, places.Len())
	for i := range locs {
		locs[i] = places.At(i)
	}
	reduce := func(loc geo.Location) geo.Location {
		return geo.Location{Country: loc.Country, Continent: loc.Continent, Province: loc.Province, ISP: loc.ISP,
			HasCoords: loc.HasCoords, Lat: loc.Lat, Lon: loc.Lon, ProvinceCoords: loc.ProvinceCoords}
	}
	seen := map[geo.Location]int{}
	for i, loc := range locs {
		if _, dup := seen[loc]; dup {
			t.Fatalf("%+v twice", loc)
		}
		seen[loc] = i
	}
	for _, a := range precomputeAddrs() {
		if _, special := geo.Special(a); special {
			continue
		}
		if r := l.Locate(context.Background(), a); r.Source == geo.SourceDB {
			if _, ok := seen[reduce(r.Location)]; !ok {
				t.Fatalf("%s: %+v not placed", a, r.Location)
			}
		}
	}
	// Nowhere (the unknown space) first; then the two /16s (the lower
	// address first when equal), then the /24s.
	if locs[0] != (geo.Location{}) {
		t.Errorf("Heaviest: %+v", locs[0])
	}
	if us, cn := locs[1], locs[2]; us.Country != "US" || cn.Country != "CN" || cn.Province != "" || cn.ISP != "telecom" {
		t.Errorf("Then: %+v, %+v", us, cn)
	}
	top := placedTop(l.placedTable(), 2)
	if top.Len() != 2 || top.At(0) != locs[0] || top.At(1) != locs[1] {
		t.Errorf("placedTop(2): %+v", top.recs)
	}
}

// TestTableAnswersAheadOfCache: an address the table places for good is
// answered from it without a cache entry and without asking the cache,
// as exactly as a walk; one a later source may refine is still cached,
// and counted as before.
func TestTableAnswersAheadOfCache(t *testing.T) {
	db := testDB(t)
	// Cache sizes of their own: locators of one size share a cache.
	pre := newLocator(t, Config{DB: db, CacheSize: 4111, Precompute: &PrecomputeConfig{}})
	plain := newLocator(t, Config{DB: db, CacheSize: 4113})
	waitTable(t, pre)
	ctx := context.Background()
	for _, s := range []string{"1.0.1.9", "1.0.2.200", "8.8.8.8", "36.0.7.1"} {
		a := netip.MustParseAddr(s)
		for i := range 2 { // the second time as the first: never cached
			c, hits := snapshot(), testutil.ToFloat64(precomputedHit)
			got, want := pre.Locate(ctx, a), plain.Locate(ctx, a)
			if !sameAnswer(got, want) || got.Source != geo.SourceDB {
				t.Fatalf("%s: from the table %+v /%d\nwalked %+v /%d", a, got.Location, got.Scope, want.Location, want.Scope)
			}
			d := c.delta()
			// plain asked its cache, and its databases the first time: pre
			// only its databases' table.
			if d["lru/hit"]+d["lru/miss"] != 1 || d["db/hit"]+d["db/miss"] != float64(2-i) || testutil.ToFloat64(precomputedHit)-hits != 1 {
				t.Fatalf("%s: counters %v, %v table hits", a, d, testutil.ToFloat64(precomputedHit)-hits)
			}
		}
	}
	if n := pre.cache.len(); n != 0 {
		t.Errorf("%d cache entries for addresses the table places", n)
	}

	// With the online API after the databases, a country-level answer may
	// still be refined: it goes through the cache.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"status": "fail", "message": "reserved range"})
	}))
	defer srv.Close()
	ref := newLocator(t, Config{DB: db, CacheSize: 4117, Precompute: &PrecomputeConfig{},
		Online: &OnlineConfig{URL: srv.URL + "/json/{ip}", Format: FormatIPAPI}})
	waitTable(t, ref)
	ref.Locate(ctx, netip.MustParseAddr("1.0.1.9"))
	if n := ref.cache.len(); n != 0 {
		t.Errorf("A province from the table cached: %d entries", n)
	}
	country := ref.Locate(ctx, netip.MustParseAddr("36.0.7.1"))
	ref.idle(t)
	if n := ref.cache.len(); n != 1 || country.Province != "" || country.Scope != KeyBits4 {
		t.Errorf("Country level with a refining source: %d entries, %+v /%d", n, country.Location, country.Scope)
	}
}
