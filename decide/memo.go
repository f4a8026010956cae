package decide

import (
	"sync/atomic"
	"unsafe"

	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
)

// The memo keeps, per client address, record and type, the scoring
// decision of the stable view for the ECS clients that the precomputed
// table places for good: a query it holds skips the location chain and
// the decision cache, and runs on a shallower stack. It is exact: the
// location is rebuilt from the table's value, the decision's winner,
// ttl and scopes by the code choose runs, and an entry holds only under
// the view, the locator and its Token it was made under (its epoch). It
// keeps nothing an override, a pin, a population, a beacon or a canary
// decided, nor a decision whose ttl reads the clock.

// memoBits sizes the memo: 1<<memoBits entries, direct-mapped.
const (
	memoBits  = 16
	memoSlots = 1 << memoBits
)

type memo struct {
	epoch atomic.Pointer[memoEpoch]
	ids   atomic.Uint64
	slots [memoSlots]atomic.Pointer[memoEntry]
	// seen is the hash of the last miss of each slot: an entry is made
	// on a client's second miss, so that a stream of new clients
	// allocates nothing.
	seen [memoSlots]atomic.Uint64
}

// memoEpoch is what the entries of its id were decided under.
type memoEpoch struct {
	id   uint64
	view *policy.View
	loc  *locate.Locator
	tok  locate.Token
}

// memoEntry is one decision; it holds no pointer, so the collector skips
// it. rec is the record's address: its view, the epoch's, keeps it.
type memoEntry struct {
	epoch uint64
	addr  [16]byte
	rec   uintptr
	qtype uint16
	bits  uint8
	table uint32
	dec   scoring.Decision
}

// memoHash is the slot hash of a client's question: never 0.
func memoHash(a *[16]byte, rec uintptr, qtype uint16) uint64 {
	hi := *(*uint64)(unsafe.Pointer(&a[0]))
	lo := *(*uint64)(unsafe.Pointer(&a[8]))
	h := (hi*0x9E3779B97F4A7C15 ^ lo) * 0xC2B2AE3D27D4EB4F
	h ^= (uint64(rec) ^ uint64(qtype)<<48) * 0x165667B19E3779F9
	return h ^ h>>29 | 1
}

// current is the epoch of entries made under view, l and tok; nil when
// none is.
func (m *memo) current(view *policy.View, l *locate.Locator, tok locate.Token) *memoEpoch {
	if e := m.epoch.Load(); e != nil && e.view == view && e.loc == l && e.tok == tok {
		return e
	}
	return nil
}

// answer decides out, whose client and tok are set, from the memo: false
// when it holds no entry for it.
func (m *memo) answer(d *Decider, l *locate.Locator, q *Query, out *Outcome) bool {
	if m == nil || d.src.Canary() != nil {
		return false
	}
	e := m.current(q.View, l, out.tok)
	if e == nil {
		return false
	}
	rec := uintptr(unsafe.Pointer(q.Record))
	a := out.Client.As16()
	x := m.slots[memoHash(&a, rec, q.QType)>>(64-memoBits)].Load()
	if x == nil || x.epoch != e.id || x.rec != rec || x.qtype != q.QType || x.addr != a ||
		!l.FromTable(out.tok, out.Client, x.table, x.bits, &out.Loc) {
		return false
	}
	m.decided(d, x, q, out)
	return true
}

// decided sets out as choose would have, for the decision x keeps.
func (m *memo) decided(d *Decider, x *memoEntry, q *Query, out *Outcome) {
	out.Population, out.PopulationShare = nil, 0
	out.View, out.Record, out.QType, out.InCanary, out.Canary = q.View, q.Record, q.QType, false, nil
	out.Unit, out.UnitBits = out.Loc.SpreadUnit(d.opts.SpreadPrefix4, d.opts.SpreadPrefix6)
	pq := policyQuery(out)
	out.Decision.Decision = x.dec
	q.View.Finish(&out.Decision, pq.Client.ISP)
	d.settle(pq, nil, out)
}

// keep makes an entry of out, decided for q under l's out.tok, on its
// client's second miss; only what answer can rebuild.
func (m *memo) keep(l *locate.Locator, q *Query, out *Outcome) {
	if m == nil || !out.FromECS || out.Population != nil || out.Canary != nil || out.InCanary || out.View != q.View ||
		out.Decision.Tier == scoring.TierOverride || l.Token() != out.tok {
		return
	}
	rec := uintptr(unsafe.Pointer(q.Record))
	a := out.Client.As16()
	h := memoHash(&a, rec, q.QType)
	i := h >> (64 - memoBits)
	if m.seen[i].Load() != h {
		m.seen[i].Store(h)
		return
	}
	e := m.current(q.View, l, out.tok)
	if e == nil {
		e = &memoEpoch{id: m.ids.Add(1), view: q.View, loc: l, tok: out.tok}
		m.epoch.Store(e)
	}
	m.slots[i].Store(&memoEntry{epoch: e.id, addr: a, rec: rec, qtype: q.QType,
		bits: out.Loc.Bits, table: out.Loc.Table, dec: out.Decision.Decision})
}
