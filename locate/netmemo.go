package locate

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"sync"

	"github.com/gslbdns/gslb/geo"
)

// netMemo remembers, per database network, what the local databases said:
// a cache miss for a new /24 (/48) in a network already seen costs a few
// map probes instead of a walk and a decode of every database. Its networks
// are those in which every database has one record (geo.DB.CompareNet), so
// an answer holds for each of their addresses as is. One memo per opened
// DB: a reload starts a new one. Values are interned: networks placed
// alike share one, and an entry holds its id.
type netMemo struct {
	db     *geo.DB
	vals   interner[memoValue]
	shards [memoShards]memoShard
}

type memoShard struct {
	mu sync.Mutex
	m  map[uint64]uint64 // the value's id, and its Bits above it
	// lens4 and lens6 have bit b set when a network of length b is in m:
	// the probes skip the other lengths.
	lens4, lens6 uint64
}

type memoValue struct {
	loc   geo.Location
	other geo.Other
}

const (
	memoShards = 64
	// memoShardMax bounds a shard (about 16 bytes an entry); a full shard
	// starts over.
	memoShardMax = 1 << 13
	// The shortest networks remembered: a shard holds one /8 (/16) of
	// addresses, so every network an address may be in is in its shard.
	memoMin4, memoMin6 = 8, 16
)

func newNetMemo(db *geo.DB) *netMemo {
	m := &netMemo{db: db}
	m.vals.limit = memoShards * memoShardMax // as many as entries: unlike entries, values stay until the memo starts over
	m.vals.init()
	for i := range m.shards {
		m.shards[i].m = make(map[uint64]uint64)
	}
	return m
}

// addrBits is addr's top 32 (IPv4) or 64 bits (IPv6), left-aligned in a
// uint64, the shard it falls in, and the longest remembered length.
func (m *netMemo) addrBits(addr netip.Addr) (a uint64, s *memoShard, v6 bool) {
	if addr.Is4() {
		b := addr.As4()
		a = uint64(binary.BigEndian.Uint32(b[:])) << 32
	} else {
		b := addr.As16()
		a, v6 = binary.BigEndian.Uint64(b[:8]), true
	}
	h := a >> 56
	if v6 {
		h = (a >> 48) * 0x9E3779B97F4A7C15 >> 58
	}
	return a, &m.shards[h%memoShards], v6
}

// memoKey is the network of length n (≤ 48) that holds a: the network's
// bits, its length and the family.
func memoKey(a uint64, n int, v6 bool) uint64 {
	k := a&^(1<<(64-n)-1) | uint64(n)
	if v6 {
		k |= 0x80
	}
	return k
}

// find sets loc and other to what the databases said of the network that
// holds addr. Through pointers: it is the deepest frame of a query's
// miss, on a stack that grows by copying.
func (m *netMemo) find(addr netip.Addr, loc *geo.Location, other *geo.Other) bool {
	a, s, v6 := m.addrBits(addr)
	s.mu.Lock()
	lens := s.lens4
	if v6 {
		lens = s.lens6
	}
	for lens != 0 {
		n := bits.Len64(lens) - 1 // the longest first
		lens &^= 1 << n
		if e, ok := s.m[memoKey(a, n, v6)]; ok {
			s.mu.Unlock()
			v := m.vals.ref(uint32(e))
			if v == nil {
				return false // the values started over
			}
			*loc, *other = v.loc, v.other
			loc.Bits = uint8(e >> 32)
			return true
		}
	}
	s.mu.Unlock()
	return false
}

// add remembers what the databases said of the network of length n that
// holds addr, when it is no longer than the key and not too wide.
func (m *netMemo) add(addr netip.Addr, n uint8, loc geo.Location, other geo.Other) {
	lo, hi := memoMin4, KeyBits4
	if !addr.Is4() {
		lo, hi = memoMin6, KeyBits6
	}
	if int(n) < lo || int(n) > hi {
		return
	}
	// Without its Bits (kept in the entry): networks placed alike but
	// merged to other lengths share a value.
	bits := loc.Bits
	loc.Bits = 0
	id, ok := m.vals.id(&memoValue{loc, other})
	if !ok {
		m.startOver() // the values outgrew the interner
		return
	}
	a, s, v6 := m.addrBits(addr)
	s.mu.Lock()
	if len(s.m) >= memoShardMax {
		clear(s.m)
		s.lens4, s.lens6 = 0, 0
	}
	s.m[memoKey(a, int(n), v6)] = uint64(bits)<<32 | uint64(id)
	if v6 {
		s.lens6 |= 1 << n
	} else {
		s.lens4 |= 1 << n
	}
	s.mu.Unlock()
}

// startOver forgets every network and value.
func (m *netMemo) startOver() {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.lens4, s.lens6 = 0, 0
		s.mu.Unlock()
	}
	m.vals.reset()
}
