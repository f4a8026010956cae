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
// takes a slot only when seq matches the position it expects.
type slot struct {
	seq              atomic.Uint64
	res, resLo, clHi atomic.Uint64
	meta             atomic.Uint64
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

// The meta word: the name's hash, the ECS prefix and family, flags, the ttl.
const (
	metaBits   = 32
	metaFam    = 40
	fromECSBit = 1 << 42
	res4Bit    = 1 << 43
	clientBit  = 1 << 44
	client4Bit = 1 << 45
	byPopBit   = 1 << 46
	metaTTL    = 47 // 17 bits
	maxTTL     = 1<<17 - 1
)

func (r *ring) put(res, client netip.Addr, ecsFam, ecsBits uint8, fromECS, byPop bool, name, ttl uint32) {
	i := r.n.Add(1) - 1
	s := &r.slots[i&(ringSize-1)]
	s.seq.Store(0)
	a := res.As16()
	s.res.Store(binary.BigEndian.Uint64(a[:8]))
	s.resLo.Store(binary.BigEndian.Uint64(a[8:]))
	c := client.As16()
	if client.Is4() {
		s.clHi.Store(uint64(binary.BigEndian.Uint32(c[12:])))
	} else {
		s.clHi.Store(binary.BigEndian.Uint64(c[:8])) // a /64 is enough to place it
	}
	m := uint64(name) | uint64(ecsBits)<<metaBits | uint64(ecsFam&3)<<metaFam | uint64(min(ttl, maxTTL))<<metaTTL
	if fromECS {
		m |= fromECSBit
	}
	if byPop {
		m |= byPopBit
	}
	if res.Is4() {
		m |= res4Bit
	}
	if client.IsValid() {
		m |= clientBit
	}
	if client.Is4() {
		m |= client4Bit
	}
	s.meta.Store(m)
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
		hi, lo, cl, m := s.res.Load(), s.resLo.Load(), s.clHi.Load(), s.meta.Load()
		if s.seq.Load() != r.read+1 {
			lost++
			continue
		}
		var a [16]byte
		binary.BigEndian.PutUint64(a[:8], hi)
		binary.BigEndian.PutUint64(a[8:], lo)
		o.resolver = netip.AddrFrom16(a)
		if m&res4Bit != 0 {
			o.resolver = o.resolver.Unmap()
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
		o.name = uint32(m)
		o.ecsBits, o.ecsFam = uint8(m>>metaBits), uint8(m>>metaFam)&3
		o.fromECS, o.byPop = m&fromECSBit != 0, m&byPopBit != 0
		o.ttl = uint32(m >> metaTTL)
		f(&o)
	}
	return lost
}
