package locate

import (
	"net/netip"
	"testing"
)

func BenchmarkLRUHit(b *testing.B) {
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

// BenchmarkLRUHitManySubnets spreads hits over many /24s (and shards).
func BenchmarkLRUHitManySubnets(b *testing.B) {
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
