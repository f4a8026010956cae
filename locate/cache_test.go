package locate

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/gslbdns/gslb/geo"
)

// TestCacheExactBoundSharded: a sharded cache sent many times its size in
// distinct /24s holds exactly its size (and says so in the gauge), and
// every key still in a slot is found with its own location, however many
// evictions its index went through.
func TestCacheExactBoundSharded(t *testing.T) {
	const size = 20000
	g0 := gauge(CacheEntries)
	c := newCache(size)
	if len(c.shards) < 2 {
		t.Fatalf("%d shards, want several", len(c.shards))
	}
	locs := make([]geo.Location, 50)
	for i := range locs {
		locs[i] = geo.Location{Country: "CN", Province: "ZJ", City: fmt.Sprintf("city %d", i), Bits: 24, Source: geo.SourceDB}
	}
	locOf := func(k Key) geo.Location { return locs[uint64(k)>>8%uint64(len(locs))] }
	now := time.Now().UnixNano()
	exp := now + int64(time.Hour)
	r := rand.New(rand.NewPCG(3, 4))
	var all []Key
	for i := range 10 * size {
		k := KeyOf(netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0}))
		all = append(all, k)
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for i, k := range all {
		c.add(k, locOf(k), now, exp, 1)
		if i%997 == 0 { // hits set CLOCK's bit: some entries get their second chance
			c.get(all[r.IntN(i+1)], now, 1)
		}
	}
	if n := c.len(); n != size {
		t.Errorf("Cache holds %d entries after %d distinct /24s, want exactly %d", n, len(all), size)
	}
	if g := gauge(CacheEntries) - g0; g != size {
		t.Errorf("Cache entries gauge moved by %v, want %d", g, size)
	}
	held := map[Key]bool{}
	for i := range c.shards {
		for _, e := range c.shards[i].ents {
			held[e.key] = true
		}
	}
	if len(held) != size {
		t.Fatalf("%d distinct keys in the slots, want %d", len(held), size)
	}
	for _, k := range all {
		loc, ok := c.get(k, now, 1)
		if ok != held[k] {
			t.Fatalf("%v: found %v, held %v", k.Prefix(), ok, held[k])
		}
		if ok && loc != locOf(k) {
			t.Fatalf("%v: %+v, want %+v", k.Prefix(), loc, locOf(k))
		}
	}
	c.purge()
	if g := gauge(CacheEntries) - g0; g != 0 {
		t.Errorf("Cache entries gauge is %v above its start after purge, want 0", g)
	}
}

// TestCacheInsertAllocs: filling a shard allocates only when its index
// doubles; an insert that evicts allocates nothing.
func TestCacheInsertAllocs(t *testing.T) {
	c := newCache(1000)
	loc := geo.Location{Country: "CN", Province: "ZJ", City: "Hangzhou", Bits: 24, Source: geo.SourceDB}
	now := time.Now().UnixNano()
	i := 0
	add := func() {
		c.add(KeyOf(netip.AddrFrom4([4]byte{1, byte(i >> 8), byte(i), 0})), loc, now, now+int64(time.Hour), 1)
		i++
	}
	// Counted in total, not per run: growing a map or a slice now and then
	// averages to less than one allocation an insert.
	// The count is the process's: settle the collector's cleanups first,
	// and tolerate a stray allocation of another goroutine (an insert that
	// allocated would count thousands).
	mallocs := func(n int) uint64 {
		runtime.GC()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		for range n {
			add()
		}
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs
	}
	add()
	if n := mallocs(900); n > 9 {
		t.Errorf("900 inserts below the bound allocate %v times, want at most 9 (the index doubling from 16 to 2048)", n)
	}
	if n := mallocs(5000); n > 3 {
		t.Errorf("5000 inserts that evict allocate %v times, want none (at most 3 strays)", n)
	}
	defer c.purge()
	if n := c.len(); n != 1000 {
		t.Errorf("Cache holds %d, want 1000", n)
	}
}

// TestCacheOwnsItsStrings: a location from the precomputed table holds
// parts of the table's one string; the cache keeps copies, so that the
// table's strings go with the table.
func TestCacheOwnsItsStrings(t *testing.T) {
	tab := packStrs([]string{"CN", "AS", "ZJ", "Hangzhou", "telecom"})
	loc := geo.Location{Country: tab.at(0), Continent: tab.at(1), Province: tab.at(2), City: tab.at(3), ISP: tab.at(4), Bits: 24}
	c := newCache(100)
	now := time.Now().UnixNano()
	k := KeyOf(netip.MustParseAddr("1.0.1.0"))
	c.add(k, loc, now, now+int64(time.Hour), 1)
	got, ok := c.get(k, now, 1)
	if !ok || got != loc {
		t.Fatalf("Got %+v (%v), want %+v", got, ok, loc)
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(tab.all)))
	hi := lo + uintptr(len(tab.all))
	for _, s := range []string{got.Country, got.Continent, got.Province, got.City, got.ISP} {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
			t.Errorf("%q is still a part of the table's string", s)
		}
	}
}
