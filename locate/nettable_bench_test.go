package locate

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// BenchmarkTableLookup is the table's lookup alone of a new /24 of
// coldDB's each time, as the chain reads it (normalized).
func BenchmarkTableLookup(b *testing.B) {
	db := coldDB(b)
	l := newLocator(b, Config{DB: db, CacheSize: 1<<20 + 3, Precompute: &PrecomputeConfig{MaxBytes: 1 << 30}})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if t := l.dbs.pre.Load(); t != nil && t.db == db && t.carriers == l.carriers.Load() {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("No table within a minute")
		}
	}
	const n = 32 << 16
	var q Query
	var o geo.Other
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := uint32(i*40503) % n
		q.Addr = netip.AddrFrom4([4]byte{byte(32 + j>>16), byte(j >> 8), byte(j), 1})
		if !l.dbs.fromTable(db, &q, &o) {
			b.Fatal("Not in the table")
		}
		i++
	}
}
