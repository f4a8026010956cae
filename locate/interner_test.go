package locate

import (
	"hash/maphash"
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// TestInternerHashCollision: the index holds hashes, so two locations
// whose hashes collide must still get ids of their own, each found again.
func TestInternerHashCollision(t *testing.T) {
	var in interner[geo.Location]
	in.init()
	a := geo.Location{Country: "CN", Province: "ZJ", Bits: 24}
	b := geo.Location{Country: "CN", Province: "JS", Bits: 24}
	ida, ok := in.id(&a)
	if !ok {
		t.Fatal("Expected a to be interned")
	}
	// b's hash now names a, as a collision would.
	in.ids[maphash.Comparable(in.seed, b)] = ida
	idb, ok := in.id(&b)
	if !ok || idb == ida {
		t.Fatalf("Expected b its own id, got %d (a has %d)", idb, ida)
	}
	for _, c := range []struct {
		loc geo.Location
		id  uint32
	}{{a, ida}, {b, idb}} {
		if id, _ := in.id(&c.loc); id != c.id {
			t.Errorf("Expected %v to keep id %d, got %d", c.loc, c.id, id)
		}
		if got, ok := in.at(c.id); !ok || got != c.loc {
			t.Errorf("Expected at(%d) = %v, got %v (%v)", c.id, c.loc, got, ok)
		}
	}
}

// TestInternerLimit: an interner with a limit refuses values past it, and
// a reset forgets the ids it gave.
func TestInternerLimit(t *testing.T) {
	in := interner[memoValue]{limit: 2}
	in.init()
	var ids []uint32
	for i := range 2 {
		id, ok := in.id(&memoValue{loc: geo.Location{ASN: uint32(i)}})
		if !ok {
			t.Fatalf("Expected value %d interned", i)
		}
		ids = append(ids, id)
	}
	if _, ok := in.id(&memoValue{loc: geo.Location{ASN: 9}}); ok {
		t.Error("Expected a third value refused at limit 2")
	}
	if id, ok := in.id(&memoValue{loc: geo.Location{ASN: 1}}); !ok || id != ids[1] {
		t.Errorf("Expected a known value found at the limit, got %d %v", id, ok)
	}
	in.reset()
	if _, ok := in.at(ids[0]); ok {
		t.Error("Expected an id from before the reset not found")
	}
}

// TestNetMemoValuesStartOver: past its values' limit the memo forgets
// every network rather than answer with a value it no longer has.
func TestNetMemoValuesStartOver(t *testing.T) {
	m := newNetMemo(nil)
	m.vals.limit = 1
	a, b := netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("5.6.7.8")
	m.add(a, 16, geo.Location{ASN: 1}, geo.Other{})
	if v, ok := m.lookup(a); !ok || v.loc.ASN != 1 {
		t.Fatalf("Expected a's network remembered, got %v %v", v, ok)
	}
	m.add(b, 16, geo.Location{ASN: 2}, geo.Other{})
	for _, addr := range []netip.Addr{a, b} {
		if v, ok := m.lookup(addr); ok {
			t.Errorf("Expected %s forgotten after the memo started over, got %v", addr, v)
		}
	}
	m.add(b, 16, geo.Location{ASN: 2}, geo.Other{})
	if v, ok := m.lookup(b); !ok || v.loc.ASN != 2 {
		t.Errorf("Expected b's network remembered after starting over, got %v %v", v, ok)
	}
}

// TestBitsKeptPerEntry: networks placed alike but merged to other lengths
// share one interned value, in the cache and in the memo, and each reads
// back its own Bits.
func TestBitsKeptPerEntry(t *testing.T) {
	c := newCache(100)
	now := time.Now().UnixNano()
	a := geo.Location{Country: "CN", Province: "ZJ", ISP: "telecom", Bits: 20, Source: geo.SourceDB}
	b := a
	b.Bits = 22
	ka, kb := KeyOf(netip.MustParseAddr("1.2.3.0")), KeyOf(netip.MustParseAddr("1.2.4.0"))
	c.add(ka, a, now, now+int64(time.Hour), 1)
	c.add(kb, b, now, now+int64(time.Hour), 1)
	if c.locs.n != 1 {
		t.Errorf("Expected one interned location for two Bits, got %d", c.locs.n)
	}
	for k, want := range map[Key]geo.Location{ka: a, kb: b} {
		if got, ok := c.get(k, now, 1); !ok || got != want {
			t.Errorf("Expected %+v from the cache, got %+v %v", want, got, ok)
		}
	}

	m := newNetMemo(nil)
	aa, ab := netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("9.9.9.9")
	m.add(aa, 16, a, geo.Other{})
	m.add(ab, 16, b, geo.Other{})
	if m.vals.n != 1 {
		t.Errorf("Expected one memo value for two Bits, got %d", m.vals.n)
	}
	for addr, want := range map[netip.Addr]geo.Location{aa: a, ab: b} {
		if v, ok := m.lookup(addr); !ok || v.loc != want {
			t.Errorf("Expected %+v from the memo, got %+v %v", want, v.loc, ok)
		}
	}
}
