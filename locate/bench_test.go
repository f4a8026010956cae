package locate

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/offheap"
	"github.com/gslbdns/gslb/internal/testsupport"
)

func BenchmarkCacheHit(b *testing.B) {
	l := newLocator(b, Config{DB: testDB(b)})
	addrs := make([]netip.Addr, 256)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{1, 0, 1, byte(i)})
	}
	l.Locate(ctx, addrs[0])
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			l.Locate(ctx, addrs[i&255])
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				l.Locate(ctx, addrs[i&255])
				i++
			}
		})
	})
}

// BenchmarkCacheHitManySubnets spreads hits over many /24s (and shards).
func BenchmarkCacheHitManySubnets(b *testing.B) {
	l := newLocator(b, Config{DB: testDB(b)})
	addrs := make([]netip.Addr, 1<<16)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{36, byte(i >> 8), byte(i), 1})
		l.Locate(ctx, addrs[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Locate(ctx, addrs[(i*257)&(1<<16-1)])
			i++
		}
	})
}

func BenchmarkDBLookup(b *testing.B) {
	db := testDB(b)
	tests := []struct{ name, addr string }{{"province", "1.0.1.7"}, {"country+asn", "36.0.5.1"}, {"unknown", "9.9.9.9"}}
	for _, tc := range tests {
		a := netip.MustParseAddr(tc.addr)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				db.Lookup(a)
			}
		})
	}
}

// BenchmarkCacheMemory fills a cache with 1,000,000 distinct /24s, placed
// at 3,000 distinct locations, and reports the memory each entry takes:
// on the heap and in the cache's mappings outside it (B/entry, both).
func BenchmarkCacheMemory(b *testing.B) {
	const n = 1000000
	locs := make([]geo.Location, 3000)
	for i := range locs {
		locs[i] = geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: fmt.Sprintf("City %d", i%300),
			ISP: []string{"telecom", "unicom", "mobile"}[i%3], ASN: uint32(4134 + i%50), HasCoords: true,
			Lat: 30 + float64(i)/1000, Lon: 120, Bits: 24, Source: geo.SourceDB}
	}
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		off := offheap.Bytes()
		c := newCache(n)
		now := time.Now().UnixNano()
		for i := range n {
			c.add(KeyOf(netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0})), locs[i%len(locs)], now, now+int64(time.Hour), 1)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		// Shards fill unevenly: a full one evicts before the others are.
		if l := c.len(); l > n || l < n*999/1000 {
			b.Fatalf("Cache holds %d, want nearly %d and never more", l, n)
		}
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric((heap+float64(offheap.Bytes()-off))/n, "B/entry")
		b.ReportMetric(heap/n, "heap-B/entry")
		runtime.KeepAlive(c)
	}
}

// coldDB is a real-shaped pair of databases over 32.0.0.0/3:
// City networks of /14 to /22 cycling through provinces and cities (one
// record per network, as GeoLite2 has), ASN networks of /12 to /18 on
// other boundaries, three carriers.
func coldDB(b *testing.B) *geo.DB {
	b.Helper()
	provs := []string{"ZJ", "BJ", "GD", "SC", "JS", "SD", "HB", "HN", "FJ", "SH", "TJ", "CQ", "HE", "SX", "LN", "JL"}
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	for a, i := uint32(32<<24), 0; a < 64<<24; i++ {
		bits := 14 + i*7%9 // /14 .. /22
		size := uint32(1) << (32 - bits)
		a = (a + size - 1) &^ (size - 1)
		if a >= 64<<24 {
			break
		}
		p := provs[i%len(provs)]
		cities = append(cities, mmdbgen.City{Network: fmt.Sprintf("%s/%d", netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), 0}), bits),
			Country: "CN", Province: p, City: fmt.Sprintf("%s city %d", p, i%40), Lat: 30 + float64(i%40)/10, Lon: 120, Radius: 50})
		a += size
	}
	orgs := []struct {
		asn uint32
		org string
	}{{4134, "CHINANET"}, {4837, "CHINA UNICOM China169 Backbone"}, {9808, "China Mobile Communications Group Co., Ltd."}}
	for a, i := uint32(32<<24), 0; a < 64<<24; i++ {
		bits := 12 + i*5%7 // /12 .. /18
		size := uint32(1) << (32 - bits)
		a = (a + size - 1) &^ (size - 1)
		if a >= 64<<24 {
			break
		}
		o := orgs[i%len(orgs)]
		asns = append(asns, mmdbgen.ASN{Network: fmt.Sprintf("%s/%d", netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), 0, 0}), bits), ASN: o.asn, Org: o.org})
		a += size
	}
	city, asn := testsupport.WriteDBs(b, b.TempDir(), cities, asns)
	db, err := geo.Open(city, asn)
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	return db
}

// BenchmarkColdMiss locates a new /24 each time (every one a cache miss
// and an insert, past cache_size an eviction too) in real-shaped
// databases: what a cold server pays per query in the location chain.
func BenchmarkColdMiss(b *testing.B) {
	db := coldDB(b)
	l := newLocator(b, Config{DB: db, CacheSize: 1 << 20})
	coldLoop(b, l)
}

// coldLoop asks l for a new /24 of coldDB's each time.
func coldLoop(b *testing.B, l *Locator) {
	const n = 32 << 16 // the /24s of 32/8 to 63/8
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// A stride through the /24s: consecutive queries land in other networks.
		j := uint32(i*40503) % n
		l.Locate(ctx, netip.AddrFrom4([4]byte{byte(32 + j>>16), byte(j >> 8), byte(j), 1}))
		i++
	}
}

// BenchmarkColdMissPrecomputed is BenchmarkColdMiss with the table of the
// databases' networks built: each new /24 is a lookup in it.
func BenchmarkColdMissPrecomputed(b *testing.B) {
	db := coldDB(b)
	l := newLocator(b, Config{DB: db, CacheSize: 1<<20 + 1, Precompute: &PrecomputeConfig{}})
	for deadline := time.Now().Add(time.Minute); l.Placed() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("No table within a minute")
		}
	}
	coldLoop(b, l)
}

// BenchmarkWarmPrecomputed cycles through 20,000 /24s already asked, with
// the table built: what a warm server pays per query in the location
// chain.
func BenchmarkWarmPrecomputed(b *testing.B) {
	db := coldDB(b)
	l := newLocator(b, Config{DB: db, CacheSize: 1<<20 + 3, Precompute: &PrecomputeConfig{}})
	for deadline := time.Now().Add(time.Minute); l.Placed() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("No table within a minute")
		}
	}
	const n = 20000
	addrs := make([]netip.Addr, n)
	for i := range addrs {
		j := uint32(i*40503) % (32 << 16)
		addrs[i] = netip.AddrFrom4([4]byte{byte(32 + j>>16), byte(j >> 8), byte(j), 1})
		l.Locate(ctx, addrs[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Locate(ctx, addrs[i%n])
	}
}
