package locate

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"time"
	"unsafe"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/recovery"
)

// Defaults of the precomputation's budget.
const (
	DefaultPrecomputeBytes = 64 << 20
	DefaultPrecomputeTime  = time.Minute
)

// PrecomputeConfig bounds the table of IPv4 networks built when the
// databases load; Off: none, every new network is walked on its first
// query.
type PrecomputeConfig struct {
	Off      bool
	MaxBytes int64         // 0 = DefaultPrecomputeBytes
	MaxTime  time.Duration // 0 = DefaultPrecomputeTime
}

// noVal marks a range the table does not answer for: a special range, one
// no database can bound, and everything past where the budget ran out.
const noVal = ^uint32(0)

// netTable is what the databases say of every IPv4 network, walked once
// at load time, so that a query for a /24 never seen is a lookup without a
// lock. Its ranges are the databases' networks (CompareNet's), adjacent
// ones with the same answer joined, and split at every /16 so that a
// lookup searches only its /16's ranges. Immutable.
type netTable struct {
	db    *geo.DB
	dir   []uint32 // dir[h]..dir[h+1] are the ranges of /16 h
	start []uint32 // each range's first address, sorted; it ends where the next starts
	val   []uint32 // each range's value; noVal: not answered here
	vals  []memoValue
	// norm are vals' locations through carriers, for a chain that applies
	// nothing after the databases; nil: the chain normalizes.
	norm     []geo.Location
	carriers *geo.Carriers
	bytes    int64
	// order is vals' indices, the most addresses first.
	order []uint32
	end   uint64 // the first address not walked; 1<<32: none
}

// find returns the value of the range that holds a.
func (t *netTable) find(a uint32) (uint32, bool) {
	h := a >> 16
	lo, hi := t.dir[h], t.dir[h+1]
	if lo == hi {
		return 0, false
	}
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if t.start[m] <= a {
			lo = m
		} else {
			hi = m
		}
	}
	v := t.val[lo]
	return v, v != noVal
}

// tableBuild is a table being walked.
type tableBuild struct {
	t   *netTable
	ids map[memoValue]uint32
}

// add appends the range from a with value v, joined to the last one when
// they agree and a starts no /16.
func (b *tableBuild) add(a, v uint32) {
	t := b.t
	if n := len(t.val); n > 0 && t.val[n-1] == v && a&0xffff != 0 {
		return
	}
	t.start, t.val = append(t.start, a), append(t.val, v)
}

// id interns v.
func (b *tableBuild) id(v memoValue) uint32 {
	if id, ok := b.ids[v]; ok {
		return id
	}
	id := uint32(len(b.t.vals))
	b.t.vals = append(b.t.vals, v)
	b.ids[v] = id
	return id
}

// valueBytes is what a value costs once the table is normalized: its
// copy, its carrier-mapped location and its place in the order; the
// strings are shared with the databases.
const valueBytes = int64(unsafe.Sizeof(memoValue{})) + int64(unsafe.Sizeof(geo.Location{})) + 4

// dirBytes is the /16 directory's.
const dirBytes = (1<<16 + 1) * 4

// buildTable walks IPv4 through db within cfg's budget, stopping early
// when stop closes. The part walked when the budget runs out is kept: the
// rest goes the way of a table-less lookup.
func buildTable(db *geo.DB, cfg PrecomputeConfig, stop <-chan struct{}) *netTable {
	deadline := time.Now().Add(cfg.MaxTime)
	b := &tableBuild{t: &netTable{db: db}, ids: make(map[memoValue]uint32)}
	var a uint64
walk:
	for steps := 0; a < 1<<32; steps++ {
		if steps&1023 == 1023 {
			select {
			case <-stop:
				return nil
			default:
			}
			if time.Now().After(deadline) {
				break walk
			}
		}
		if dirBytes+int64(len(b.t.start))*8+int64(len(b.t.vals))*valueBytes > cfg.MaxBytes {
			break
		}
		var raw [4]byte
		binary.BigEndian.PutUint32(raw[:], uint32(a))
		addr := netip.AddrFrom4(raw)
		n, v := KeyBits4, noVal
		if bits, ok := geo.Special(addr); ok {
			n = bits
		} else if loc, other, nb := db.CompareNet(addr); nb <= 32 {
			n, v = int(nb), b.id(memoValue{loc, other})
		}
		size := uint64(1) << (32 - n)
		next := a&^(size-1) + size
		// A network wider than a /16 starts a range in each.
		for s := a; s < next; s = s&^0xffff + 0x10000 {
			b.add(uint32(s), v)
		}
		a = next
	}
	t := b.t
	t.end = a
	if a < 1<<32 {
		b.add(uint32(a), noVal)
	}
	t.dir = make([]uint32, 1<<16+1)
	i := 0
	for h := range 1 << 16 {
		t.dir[h] = uint32(i)
		for i < len(t.start) && t.start[i]>>16 == uint32(h) {
			i++
		}
	}
	t.dir[1<<16] = uint32(len(t.start))
	t.start, t.val = t.start[:len(t.start):len(t.start)], t.val[:len(t.val):len(t.val)]
	weight := make([]uint64, len(t.vals))
	for i, v := range t.val {
		if v != noVal {
			end := uint64(1) << 32
			if i+1 < len(t.start) {
				end = uint64(t.start[i+1])
			}
			weight[v] += end - uint64(t.start[i])
		}
	}
	t.order = make([]uint32, len(t.vals))
	for i := range t.order {
		t.order[i] = uint32(i)
	}
	slices.SortStableFunc(t.order, func(a, b uint32) int { return cmp.Compare(weight[b], weight[a]) })
	t.bytes = dirBytes + int64(len(t.start))*8 + int64(len(t.vals))*(int64(unsafe.Sizeof(memoValue{}))+4)
	return t
}

// normalized is t with its locations through c; t itself when they are.
func (t *netTable) normalized(c *geo.Carriers) *netTable {
	if t.carriers == c && t.norm != nil {
		return t
	}
	n := *t
	n.carriers = c
	n.norm = make([]geo.Location, len(t.vals))
	for i := range t.vals {
		n.norm[i] = t.vals[i].loc
		c.Apply(&n.norm[i])
	}
	loc := int64(unsafe.Sizeof(geo.Location{}))
	n.bytes = t.bytes - int64(len(t.norm))*loc + int64(len(n.norm))*loc
	return &n
}

// precompute builds the table of the databases the chain reads and of its
// carrier table whenever either changes (a signal on l.repre), until
// stop. A table of databases no longer read is dropped; until the new one
// is ready queries walk the databases as without one.
func (l *Locator) precompute(stop chan struct{}) {
	defer l.wg.Done()
	for {
		select {
		case <-stop:
			return
		case <-l.repre:
		}
		recovery.Do("precompute", func() { l.refreshTable(stop) })
		// Even after a panic: readiness waits for the first run.
		if !l.tabled.Swap(true) && l.onTable != nil {
			l.onTable()
		}
	}
}

// refreshTable brings the table up to the databases and carriers read now.
func (l *Locator) refreshTable(stop chan struct{}) {
	db := l.dbs.db.Load()
	cur := l.dbs.pre.Load()
	if db == nil {
		l.storeTable(nil)
		return
	}
	if cur == nil || cur.db != db {
		began := time.Now()
		cur = buildTable(db, l.pcfg, stop)
		if cur == nil {
			return
		}
		log.Infof("Precomputed the locations of %d IPv4 ranges (%d distinct) in %s",
			len(cur.start), len(cur.vals), time.Since(began).Round(time.Millisecond))
		PrecomputeSeconds.Set(time.Since(began).Seconds())
	}
	if l.lists == nil {
		cur = cur.normalized(l.carriers.Load())
	}
	if l.dbs.db.Load() == db {
		l.storeTable(cur)
	}
}

func (l *Locator) storeTable(t *netTable) {
	l.dbs.pre.Store(t)
	l.tabled.Store(true)
	if l.onTable != nil {
		l.onTable()
	}
	if t == nil {
		PrecomputedRanges.Set(0)
		PrecomputedBytes.Set(0)
		return
	}
	PrecomputedRanges.Set(float64(len(t.start)))
	PrecomputedBytes.Set(float64(t.bytes))
}

// prebuild builds db's table in the caller, before db is swapped in (a
// reload's), when the precomputation runs; the table is read once db is.
func (l *Locator) prebuild(db *geo.DB) {
	l.mu.Lock()
	stop := l.stopPre
	l.mu.Unlock()
	if stop == nil {
		return
	}
	recovery.Do("precompute", func() {
		began := time.Now()
		if t := buildTable(db, l.pcfg, stop); t != nil {
			PrecomputeSeconds.Set(time.Since(began).Seconds())
			if l.lists == nil {
				t = t.normalized(l.carriers.Load())
			}
			l.storeTable(t)
		}
	})
}

// signalPrecompute asks the precomputation to catch up; it never blocks.
func (l *Locator) signalPrecompute() {
	if l.repre == nil {
		return
	}
	select {
	case l.repre <- struct{}{}:
	default:
	}
}

// withDefaults fills c's zero budget.
func (c PrecomputeConfig) withDefaults() PrecomputeConfig {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultPrecomputeBytes
	}
	if c.MaxTime == 0 {
		c.MaxTime = DefaultPrecomputeTime
	}
	return c
}

// fromTable sets q's location and other from the table of db, when it
// walked q's address: what a walk of db would say.
func (d *databases) fromTable(db *geo.DB, q *Query, other *geo.Other) bool {
	t := d.pre.Load()
	if t == nil || t.db != db || !q.Addr.Is4() {
		return false
	}
	b := q.Addr.As4()
	v, ok := t.find(binary.BigEndian.Uint32(b[:]))
	if !ok {
		precomputedMiss.Inc()
		return false
	}
	precomputedHit.Inc()
	*other = t.vals[v].other
	// MaxMind's view is compared with the raw answer: leave it to learn.
	if t.norm != nil && t.carriers == d.l.carriers.Load() && !other.OK {
		q.Loc, q.normalized = t.norm[v], true
		return true
	}
	q.Loc = t.vals[v].loc
	return true
}

// normalizedAt is the table's location of a through the carrier table,
// as the databases' link would answer it: nil when the table does not
// place a, or when MaxMind's view is still to be compared with it.
func (d *databases) normalizedAt(a netip.Addr) *geo.Location {
	t := d.pre.Load()
	if t == nil || t.norm == nil || !a.Is4() || t.db != d.db.Load() || t.carriers != d.l.carriers.Load() {
		return nil
	}
	b := a.As4()
	v, ok := t.find(binary.BigEndian.Uint32(b[:]))
	if !ok || t.vals[v].other.OK {
		return nil
	}
	return &t.norm[v]
}

// Placed are the locations the databases give IPv4 clients, through the
// carrier table, and the order of their indices from the most addresses
// to the fewest (two may be equal): those the table walked; nil without
// one (or with carrier lists, which place clients per /24). The caller
// must not change them.
func (l *Locator) Placed() (locs []geo.Location, order []uint32) {
	t := l.dbs.pre.Load()
	if t == nil || t.norm == nil || t.db != l.dbs.db.Load() || t.carriers != l.carriers.Load() || len(t.order) == 0 {
		return nil, nil
	}
	return t.norm, t.order
}

// SetOnTable has f called after every change of the precomputed table;
// call it before Start.
func (l *Locator) SetOnTable(f func()) { l.onTable = f }

// PrecomputedUpTo is the first address the table did not walk (past the
// budget); invalid without a table or when it walked all of IPv4.
func (l *Locator) PrecomputedUpTo() netip.Addr {
	t := l.dbs.pre.Load()
	if t == nil || t.end >= 1<<32 {
		return netip.Addr{}
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(t.end))
	return netip.AddrFrom4(b)
}

// Tabled says whether the precomputation has run once (whatever it
// built); always false without one.
func (l *Locator) Tabled() bool { return l.tabled.Load() }
