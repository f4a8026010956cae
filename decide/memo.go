package decide

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

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
//
// A new view (a load report, a reload) keeps the locations: an entry of
// an earlier epoch of the same locator and Token gives its client's
// location without the chain, the new view decides, and when it decides
// the same the entry is stamped with the new epoch instead of made again.
// Entries know their record by its name's Hash, so that a reload's table
// finds them too; a table whose names' hashes collide has no memo.
// Otherwise each view would send every client through the chain and
// allocate its entry anew.

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

// memoTable holds the entries in place: the collector does not scan it,
// and an entry is never allocated. seen are hashes of each bucket's
// recent misses: an entry is made on a client's second miss, so that a
// stream of new clients does not evict.
type memoTable struct {
	slots [memoSlots]memoSlot
	// tags[i] is the tag of slots[i]'s entry, a hint read first: a
	// bucket's four are in one cache line, its slots in ten.
	tags [memoSlots]atomic.Uint64
	seen [memoSlots]atomic.Uint64
}

// memoEpoch is what the entries of its id were decided under.
type memoEpoch struct {
	id uint64
	// place is the id of the first epoch of loc and tok: entries of the
	// epochs that share it keep their locations.
	place uint64
	view  *policy.View
	loc   *locate.Locator
	tok   locate.Token
}

// memoEntry is one decision, as a slot holds it. name is the record's
// Hash, unique in the epoch's table: it names the record in every table,
// so that an entry holds across a reload too.
type memoEntry struct {
	tag   uint64 // the slot hash of its question; 0: none
	epoch uint64 // the latest epoch that decided dec; it only grows
	place uint64
	seq   uint64 // when it was made, to replace the older of a bucket's two
	addr  [16]byte
	name  uint64
	qtype uint16
	bits  uint8
	table uint32
	dec   scoring.Decision
}

// memoSlot holds an entry in words. lock is odd while a writer fills
// them; a reader keeps what it read only when lock did not move meanwhile.
type memoSlot struct {
	lock atomic.Uint64
	w    [memoWords]atomic.Uint64
}

// The words of a slot: the decision's last.
const (
	wTag = iota
	wEpoch
	wPlace
	wSeq
	wAddr
	_
	wName
	wMeta     // qtype, bits, table
	wDec      // node; tier, flags, candidates, answers; km; score; rtt; the order, two to a word
	memoWords = wDec + 5 + scoring.MaxAnswers/2
)

// The order takes whole words: an odd MaxAnswers does not compile.
var _ [1 - scoring.MaxAnswers%2]struct{}

// word is x's word k.
func (x *memoEntry) word(k int) uint64 {
	d := &x.dec
	switch {
	case k == wTag:
		return x.tag
	case k == wEpoch:
		return x.epoch
	case k == wPlace:
		return x.place
	case k == wSeq:
		return x.seq
	case k == wAddr || k == wAddr+1:
		return binary.LittleEndian.Uint64(x.addr[8*(k-wAddr):])
	case k == wName:
		return x.name
	case k == wMeta:
		return uint64(x.qtype) | uint64(x.bits)<<16 | uint64(x.table)<<32
	case k == wDec:
		return uint64(int64(d.Node))
	case k == wDec+1:
		return uint64(d.Tier) | flag(d.Tied)<<8 | flag(d.Ramping)<<9 | flag(d.Shedding)<<10 |
			uint64(uint8(d.NOrder))<<16 | uint64(uint32(d.Candidates))<<32
	case k == wDec+2:
		return math.Float64bits(d.DistanceKm)
	case k == wDec+3:
		return math.Float64bits(d.Score)
	case k == wDec+4:
		return math.Float64bits(d.RTTMs)
	}
	o := 2 * (k - wDec - 5)
	return uint64(uint32(d.Order[o])) | uint64(uint32(d.Order[o+1]))<<32
}

// setWord sets what word k of x holds.
func (x *memoEntry) setWord(k int, v uint64) {
	d := &x.dec
	switch {
	case k == wTag:
		x.tag = v
	case k == wEpoch:
		x.epoch = v
	case k == wPlace:
		x.place = v
	case k == wSeq:
		x.seq = v
	case k == wAddr || k == wAddr+1:
		binary.LittleEndian.PutUint64(x.addr[8*(k-wAddr):], v)
	case k == wName:
		x.name = v
	case k == wMeta:
		x.qtype, x.bits, x.table = uint16(v), uint8(v>>16), uint32(v>>32)
	case k == wDec:
		d.Node = int(int64(v))
	case k == wDec+1:
		d.Tier, d.Tied, d.Ramping, d.Shedding = scoring.Tier(v), v&(1<<8) != 0, v&(1<<9) != 0, v&(1<<10) != 0
		d.NOrder, d.Candidates = int(uint8(v>>16)), int(int32(uint32(v>>32)))
	case k == wDec+2:
		d.DistanceKm = math.Float64frombits(v)
	case k == wDec+3:
		d.Score = math.Float64frombits(v)
	case k == wDec+4:
		d.RTTMs = math.Float64frombits(v)
	default:
		o := 2 * (k - wDec - 5)
		d.Order[o], d.Order[o+1] = int32(uint32(v)), int32(uint32(v>>32))
	}
}

func flag(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// load copies s's entry into x: false while a writer fills it, or when
// one did meanwhile.
func (s *memoSlot) load(x *memoEntry) bool {
	l := s.lock.Load()
	if l&1 != 0 {
		return false
	}
	for k := range memoWords {
		x.setWord(k, s.w[k].Load())
	}
	return s.lock.Load() == l
}

// What stamp found.
const (
	stampOther = iota // another question's entry, or a writer's
	stampKnown        // the question's, with another decision
	stamped           // the question's, with y's decision: now of y's epoch
)

// stamp gives s's entry y's epoch when it is y's question (tag, place,
// address, record, type and location) with y's decision; it compares
// the words in place, so that a query's stack holds no second entry.
func (s *memoSlot) stamp(y *memoEntry) int {
	l := s.lock.Load()
	if l&1 != 0 || !s.lock.CompareAndSwap(l, l+1) {
		return stampOther
	}
	k := stamped
	for w := range memoWords {
		if w != wEpoch && w != wSeq && s.w[w].Load() != y.word(w) {
			if k = stampKnown; w < wDec {
				k = stampOther
				break
			}
		}
	}
	if k == stamped && s.w[wEpoch].Load() < y.epoch {
		s.w[wEpoch].Store(y.epoch)
	}
	s.lock.Store(l + 2)
	return k
}

// store writes x into s unless another writer fills it: a query that
// loses lets a later one write.
func (s *memoSlot) store(x *memoEntry) bool {
	l := s.lock.Load()
	if l&1 != 0 || !s.lock.CompareAndSwap(l, l+1) {
		return false
	}
	for k := range memoWords {
		s.w[k].Store(x.word(k))
	}
	s.lock.Store(l + 2)
	return true
}

// memoHash is the slot hash of a client's question: never 0. It hashes
// the record's name, not its address, so that a client's entry is found
// after a reload.
func memoHash(a *[16]byte, name uint64, qtype uint16) uint64 {
	hi := binary.LittleEndian.Uint64(a[:8])
	lo := binary.LittleEndian.Uint64(a[8:])
	h := (hi*0x9E3779B97F4A7C15 ^ lo) * 0xC2B2AE3D27D4EB4F
	h ^= (name ^ uint64(qtype)<<48) * 0x165667B19E3779F9
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

// epochOf is current, or a new epoch when view is the one d's source
// serves: of the place of the epoch before when its l and tok are the
// same. nil for a query of a view already replaced.
func (m *memo) epochOf(d *Decider, view *policy.View, l *locate.Locator, tok locate.Token) *memoEpoch {
	if e := m.current(view, l, tok); e != nil {
		return e
	}
	if view != d.src.View() {
		return nil
	}
	old := m.epoch.Load()
	e := &memoEpoch{id: m.ids.Add(1), view: view, loc: l, tok: tok}
	e.place = e.id
	if old != nil && old.loc == l && old.tok == tok {
		e.place = old.place
	}
	// A query that began the same epoch first wins.
	if !m.epoch.CompareAndSwap(old, e) {
		return m.current(view, l, tok)
	}
	return e
}

// answer decides out, whose client and tok are set, from the memo: hit.
// placed: the memo knew the client's location under an earlier view, and
// out.Loc holds it; the caller decides it.
func (m *memo) answer(d *Decider, l *locate.Locator, q *Query, out *Outcome) (hit, placed bool) {
	if m == nil || d.src.Canary() != nil || !q.View.Table.HashesUnique {
		return false, false
	}
	t := m.tab.Load()
	if t == nil {
		return false, false
	}
	e := m.epochOf(d, q.View, l, out.tok)
	if e == nil {
		return false, false
	}
	a := out.Client.As16()
	h := memoHash(&a, q.Record.Hash, q.QType)
	b := h >> (64 - memoBits) * memoWays
	for i := b; i < b+memoWays; i++ {
		if t.tags[i].Load() != h {
			continue
		}
		var x memoEntry
		if !t.slots[i].load(&x) || x.tag != h || x.name != q.Record.Hash || x.qtype != q.QType || x.addr != a {
			continue
		}
		// An entry of an earlier epoch of the same place gives the
		// location: it is the address's.
		now := x.epoch == e.id
		if (now || x.place == e.place) && l.FromTable(out.tok, out.Client, x.table, x.bits, &out.Loc) {
			if now {
				d.decided(&x, q, out)
			}
			return now, !now
		}
	}
	return false, false
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
// entry's. Its reads are hints: a writer may move them meanwhile.
func (t *memoTable) victim(b, h, epoch uint64) uint64 {
	for j := b; j < b+memoWays; j++ {
		if t.tags[j].Load() == h {
			return j
		}
	}
	i, oldest := b, ^uint64(0)
	for j := b; j < b+memoWays; j++ {
		if t.tags[j].Load() == 0 {
			return j // free: its slot is not read
		}
		s := &t.slots[j]
		if s.w[wEpoch].Load() != epoch {
			return j
		}
		if seq := s.w[wSeq].Load(); seq < oldest {
			i, oldest = j, seq
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
func (m *memo) keep(d *Decider, l *locate.Locator, q *Query, out *Outcome) {
	// Not a failing-open decision either: settle turns a fallback's tier
	// from fail_open, from which Finish tells its volatility.
	if m == nil || !out.FromECS || out.Population != nil || out.Canary != nil || out.InCanary || out.View != q.View ||
		out.Decision.Tier == scoring.TierOverride || out.Decision.Tier == scoring.TierFailOpen ||
		out.Decision.Tier == scoring.TierFallback || l.Token() != out.tok || !q.View.Table.HashesUnique {
		return
	}
	m.made.Do(func() { m.tab.Store(new(memoTable)) })
	t := m.tab.Load()
	e := m.epochOf(d, q.View, l, out.tok)
	if e == nil {
		return
	}
	a := out.Client.As16()
	h := memoHash(&a, q.Record.Hash, q.QType)
	b := h >> (64 - memoBits) * memoWays
	y := memoEntry{tag: h, epoch: e.id, place: e.place, addr: a, name: q.Record.Hash, qtype: q.QType,
		bits: out.Loc.Bits, table: out.Loc.Table, dec: out.Decision.Decision}
	i := t.victim(b, h, e.id)
	sl := &t.slots[i]
	known := false
	if t.tags[i].Load() == h {
		switch sl.stamp(&y) {
		case stamped:
			return // decided the same under a later view
		case stampKnown:
			known = true // a client the memo knew: a new entry at once
		}
	}
	if !known && !seen(t.seen[b:b+memoWays], h) {
		return
	}
	y.seq = m.ids.Add(1)
	if sl.store(&y) {
		t.tags[i].Store(h)
	}
}
