package locate

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/offheap"
)

// TestCacheSlotsOffHeap: a large cache's slots and index leave the heap
// and are unmapped by a purge; the entries read back the same.
func TestCacheSlotsOffHeap(t *testing.T) {
	const n = 100000
	c := newCache(n)
	now := time.Now().UnixNano()
	loc := geo.Location{Country: "CN", Province: "ZJ", ISP: "telecom", Bits: 24, Source: geo.SourceDB}
	key := func(i int) Key { return KeyOf(netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0})) }
	const added = n / 2 // shards fill unevenly: none evicts yet
	for i := range added {
		l := loc
		l.ASN = uint32(i % 7)
		c.add(key(i), l, now, now+int64(time.Hour), 1)
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		// 24-byte slots and an index of 4 bytes at twice their number.
		if got := mappedBytes(c); got < n*24 {
			t.Errorf("Expected at least %d bytes mapped for %d slots, got %d", n*24, n, got)
		}
	}
	for _, i := range []int{0, added / 2, added - 1} {
		if got, ok := c.get(key(i), now, 1); !ok || got.ASN != uint32(i%7) || got.Province != "ZJ" {
			t.Errorf("Expected entry %d read back, got %+v %v", i, got, ok)
		}
	}
	if l := c.len(); l > n {
		t.Errorf("Expected at most %d entries, got %d", n, l)
	}
	held := make([]shard, len(c.shards))
	for i := range c.shards {
		held[i].index, held[i].ents = c.shards[i].index, c.shards[i].ents
	}
	c.purge()
	if got := mappedBytes(&cache{shards: held}); got != 0 {
		t.Errorf("Expected the purge to unmap the slots: %d bytes still mapped", got)
	}
	c.add(key(1), loc, now, now+int64(time.Hour), 1) // maps again
	if got, ok := c.get(key(1), now, 1); !ok || got != loc {
		t.Errorf("Expected an entry after the purge, got %+v %v", got, ok)
	}
	c.purge()
}

// mappedBytes is what this cache's own slots and index have mapped:
// other tests' tables are freed by the collector whenever it runs, so
// the process-wide count cannot measure one cache.
func mappedBytes(c *cache) int {
	n := 0
	for i := range c.shards {
		n += offheap.Mapped(c.shards[i].index) + offheap.Mapped(c.shards[i].ents)
	}
	return n
}
