package locate

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
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
// at 3,000 distinct locations, and reports the heap each entry takes.
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
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entry")
		runtime.KeepAlive(c)
	}
}
