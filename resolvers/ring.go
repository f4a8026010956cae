package resolvers

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
)

// ring holds the queries' observations between the decision and the
// background fold: a writer takes a slot with one atomic add and fills it
// with atomic stores, so the query path neither locks nor allocates. The
// reader takes what was written since its last read; what a writer laps
// before it is read is lost (counted), which only thins a sample.
type ring struct {
	n     atomic.Uint64 // slots taken
	slots [ringSize]slot
	read  uint64 // the reader's position; the reader's alone
}

const ringSize = 1 << 14

// A slot's seq is its writer's position + 1 once written: the reader
// takes a slot only when seq matches the position it expects. An IPv4
// resolver fits in two words (its address beside the name's hash, the
// client's address beside the meta bits); an IPv6 one takes four.
type slot struct {
	seq        atomic.Uint64
	a, b, c, d atomic.Uint64
}

// obs is one query as the fold sees it.
type obs struct {
	resolver netip.Addr
	client   netip.Addr // the ECS address when the decision used it
	ecsBits  uint8      // the ECS source prefix; 0: none
	ecsFam   uint8
	fromECS  bool
	byPop    bool   // a population decided it
	name     uint32 // a hash of the question's name, for re-query intervals
	ttl      uint32 // the answer's ttl
}

// The meta word: the ECS prefix and family, flags, the ttl in its low
// 32 bits; the high 32 the client's IPv4 address (or the name's hash).
const (
	fromECSBit = 1 << 10
	res4Bit    = 1 << 11
	clientBit  = 1 << 12
	client4Bit = 1 << 13
	byPopBit   = 1 << 14
	metaTTL    = 15 // 17 bits
	maxTTL     = 1<<17 - 1
	metaBits   = 32
)

func (r *ring) put(res, client netip.Addr, ecsFam, ecsBits uint8, fromECS, byPop bool, name, ttl uint32) {
	i := r.n.Add(1) - 1
	s := &r.slots[i&(ringSize-1)]
	s.seq.Store(0)
	m := uint64(ecsBits) | uint64(ecsFam&3)<<8 | uint64(min(ttl, maxTTL))<<metaTTL
	if fromECS {
		m |= fromECSBit
	}
	if byPop {
		m |= byPopBit
	}
	if client.IsValid() {
		m |= clientBit
	}
	var cl uint64
	if client.Is4() {
		m |= client4Bit
		c := client.As4()
		cl = uint64(binary.BigEndian.Uint32(c[:]))
	} else if client.IsValid() {
		c := client.As16()
		cl = binary.BigEndian.Uint64(c[:8]) // a /64 is enough to place it
	}
	if res.Is4() {
		m |= res4Bit
		a := res.As4()
		s.a.Store(uint64(binary.BigEndian.Uint32(a[:]))<<32 | uint64(name))
		s.b.Store(m | cl<<metaBits)
	} else {
		a := res.As16()
		s.a.Store(binary.BigEndian.Uint64(a[:8]))
		s.c.Store(binary.BigEndian.Uint64(a[8:]))
		s.d.Store(cl)
		s.b.Store(m | uint64(name)<<metaBits)
	}
	s.seq.Store(i + 1)
}

// drain calls f for each observation written since the last drain, and
// returns how many were lost to writers lapping it.
func (r *ring) drain(f func(*obs)) (lost uint64) {
	end := r.n.Load()
	if end-r.read > ringSize {
		lost = end - r.read - ringSize
		r.read = end - ringSize
	}
	var o obs
	for ; r.read < end; r.read++ {
		s := &r.slots[r.read&(ringSize-1)]
		if s.seq.Load() != r.read+1 {
			lost++ // being written, or already overwritten
			continue
		}
		wa, m := s.a.Load(), s.b.Load()
		var wc, wd uint64
		if m&res4Bit == 0 {
			wc, wd = s.c.Load(), s.d.Load()
		}
		if s.seq.Load() != r.read+1 {
			lost++
			continue
		}
		var cl uint64
		if m&res4Bit != 0 {
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], uint32(wa>>32))
			o.resolver, o.name, cl = netip.AddrFrom4(a), uint32(wa), m>>metaBits
		} else {
			var a [16]byte
			binary.BigEndian.PutUint64(a[:8], wa)
			binary.BigEndian.PutUint64(a[8:], wc)
			o.resolver, o.name, cl = netip.AddrFrom16(a), uint32(m>>metaBits), wd
		}
		o.client = netip.Addr{}
		if m&clientBit != 0 {
			if m&client4Bit != 0 {
				var b [4]byte
				binary.BigEndian.PutUint32(b[:], uint32(cl))
				o.client = netip.AddrFrom4(b)
			} else {
				var b [16]byte
				binary.BigEndian.PutUint64(b[:8], cl)
				o.client = netip.AddrFrom16(b)
			}
		}
		o.ecsBits, o.ecsFam = uint8(m), uint8(m>>8)&3
		o.fromECS, o.byPop = m&fromECSBit != 0, m&byPopBit != 0
		o.ttl = uint32(m>>metaTTL) & maxTTL
		f(&o)
	}
	return lost
}
