package decide

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
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
// decided, nor a decision whose ttl reads the clock, nor one failing open.

// The memo's size: 1<<memoBits buckets of memoWays entries; a client's
// question hashes to one bucket.
const (
	memoBits  = 15
	memoWays  = 4
	memoSlots = memoWays << memoBits
)

type memo struct {
	epoch atomic.Pointer[memoEpoch]
	ids   atomic.Uint64
	// tab is made on the first entry: a decider that never keeps one
	// (the tools, Explain) holds no table.
	tab  atomic.Pointer[memoTable]
	made sync.Once
}

// memoTable holds the entries. tags[i] is the hash of slots[i]'s entry,
// read first, so that a lookup reads one entry at most. The slots come
// first: the collector scans the table only as far as its last pointer.
type memoTable struct {
	slots [memoSlots]atomic.Pointer[memoEntry]
	tags  [memoSlots]atomic.Uint64
	// seen are hashes of each bucket's recent misses: an entry is made
	// on a client's second miss, so that a stream of new clients neither
	// allocates nor evicts.
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
	seq   uint64 // when it was made, to replace the older of a bucket's two
	addr  [16]byte
	rec   uintptr
	qtype uint16
	bits  uint8
	table uint32
	dec   scoring.Decision
}

// memoHash is the slot hash of a client's question: never 0.
func memoHash(a *[16]byte, rec uintptr, qtype uint16) uint64 {
	hi := binary.LittleEndian.Uint64(a[:8])
	lo := binary.LittleEndian.Uint64(a[8:])
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
	t, e := m.tab.Load(), m.current(q.View, l, out.tok)
	if e == nil {
		// Let the old view, databases and table go: the next entry
		// makes the next epoch.
		if old := m.epoch.Load(); old != nil {
			m.epoch.CompareAndSwap(old, nil)
		}
		return false
	}
	if t == nil {
		return false
	}
	rec := uintptr(unsafe.Pointer(q.Record))
	a := out.Client.As16()
	h := memoHash(&a, rec, q.QType)
	b := h >> (64 - memoBits) * memoWays
	for i := b; i < b+memoWays; i++ {
		if t.tags[i].Load() != h {
			continue
		}
		x := t.slots[i].Load()
		if x != nil && x.epoch == e.id && x.rec == rec && x.qtype == q.QType && x.addr == a &&
			l.FromTable(out.tok, out.Client, x.table, x.bits, &out.Loc) {
			d.decided(x, q, out)
			return true
		}
	}
	return false
}

// decided sets out as choose would have, for the decision x keeps.
func (d *Decider) decided(x *memoEntry, q *Query, out *Outcome) {
	out.Population, out.PopulationShare = nil, 0
	out.View, out.Record, out.QType, out.InCanary, out.Canary = q.View, q.Record, q.QType, false, nil
	out.Unit, out.UnitBits = out.Loc.SpreadUnit(d.opts.SpreadPrefix4, d.opts.SpreadPrefix6)
	pq := policyQuery(out)
	out.Decision.Decision = x.dec
	q.View.Finish(&out.Decision, pq.Client.ISP)
	d.settle(pq, nil, out)
}

// victim is the slot of bucket b for an entry of hash h in epoch: the one
// h holds already, a free one or one of an older epoch, else the oldest
// entry's.
func (t *memoTable) victim(b, h, epoch uint64) uint64 {
	for j := b; j < b+memoWays; j++ {
		if t.tags[j].Load() == h {
			return j
		}
	}
	i, oldest := b, ^uint64(0)
	for j := b; j < b+memoWays; j++ {
		x := t.slots[j].Load()
		if x == nil || x.epoch != epoch {
			return j
		}
		if x.seq < oldest {
			i, oldest = j, x.seq
		}
	}
	return i
}

// seen reports whether h is among marks, the hashes of a bucket's last
// misses, and when not, puts it in the place of one, drawn at random: one
// store, and clients of one bucket cannot keep replacing each other's.
func seen(marks []atomic.Uint64, h uint64) bool {
	for k := range marks {
		if marks[k].Load() == h {
			return true
		}
	}
	marks[rand.Uint64()%uint64(len(marks))].Store(h)
	return false
}

// keep makes an entry of out, decided for q under l's out.tok, on its
// client's second miss; only what answer can rebuild.
func (m *memo) keep(l *locate.Locator, q *Query, out *Outcome) {
	// Not a failing-open decision either: settle turns a fallback's tier
	// from fail_open, from which Finish tells its volatility.
	if m == nil || !out.FromECS || out.Population != nil || out.Canary != nil || out.InCanary || out.View != q.View ||
		out.Decision.Tier == scoring.TierOverride || out.Decision.Tier == scoring.TierFailOpen ||
		out.Decision.Tier == scoring.TierFallback || l.Token() != out.tok {
		return
	}
	m.made.Do(func() { m.tab.Store(new(memoTable)) })
	t := m.tab.Load()
	rec := uintptr(unsafe.Pointer(q.Record))
	a := out.Client.As16()
	h := memoHash(&a, rec, q.QType)
	b := h >> (64 - memoBits) * memoWays
	if !seen(t.seen[b:b+memoWays], h) {
		return
	}
	e := m.current(q.View, l, out.tok)
	if e == nil {
		e = &memoEpoch{id: m.ids.Add(1), view: q.View, loc: l, tok: out.tok}
		m.epoch.Store(e)
	}
	i := t.victim(b, h, e.id)
	// The tag last: a reader that sees it sees the entry, or an older
	// one it then refuses by its fields.
	t.slots[i].Store(&memoEntry{epoch: e.id, seq: m.ids.Add(1), addr: a, rec: rec, qtype: q.QType,
		bits: out.Loc.Bits, table: out.Loc.Table, dec: out.Decision.Decision})
	t.tags[i].Store(h)
}
