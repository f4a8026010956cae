package locate

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/overrides"
)

// Defaults of the precomputation's budget.
const (
	DefaultPrecomputeBytes = 96 << 20
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
		// Nothing reads a table of other databases: let it and them go
		// before the walk, not after.
		l.dbs.pre.Store(nil)
		began := time.Now()
		cur = buildTable(db, l.pcfg, stop)
		if cur == nil {
			return
		}
		logTable(cur, l.pcfg, time.Since(began))
	}
	if l.lists == nil {
		cur = cur.normalized(l.carriers.Load())
	}
	if l.dbs.db.Load() == db {
		l.storeTable(cur)
	}
}

// logTable says what a walk built, and warns when its budget stopped it.
func logTable(t *netTable, cfg PrecomputeConfig, took time.Duration) {
	PrecomputeSeconds.Set(took.Seconds())
	log.Infof("Precomputed the locations of %d IPv4 ranges (%d distinct) in %s, %d bytes",
		t.d.ranges(), len(t.d.vals), took.Round(time.Millisecond), t.bytes())
	if t.end >= 1<<32 {
		return
	}
	upTo := t.upTo()
	if t.past == "time" {
		log.Warningf("precompute: the walk of IPv4 stopped at %s after %s (the budget's time); a longer one would cover the rest, which is walked per new network",
			upTo, cfg.MaxTime)
		return
	}
	// The rest of IPv4 as dense as the part walked: a rough figure.
	need := float64(t.bytes()) * float64(uint64(1)<<32) / float64(max(t.end, 1))
	log.Warningf("precompute: the walk of IPv4 stopped at %s, past the budget of %d bytes; about %.0fMiB would cover it all (the rest is walked per new network)",
		upTo, cfg.MaxBytes, need/(1<<20)+1)
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
	PrecomputedRanges.Set(float64(t.d.ranges()))
	PrecomputedBytes.Set(float64(t.bytes()))
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

// tableAt is the table of db and its range holding a: t nil when there
// is none, found false when the table does not answer for a.
func (d *databases) tableAt(db *geo.DB, a netip.Addr) (t *netTable, v uint32, bits uint8, found bool) {
	t = d.pre.Load()
	if t == nil || t.db != db || !a.Is4() {
		return nil, 0, 0, false
	}
	b := a.As4()
	v, bits, found = t.d.find(binary.BigEndian.Uint32(b[:]))
	return t, v, bits, found
}

// fromTable sets q's location and other from the table of db, when it
// walked q's address: what a walk of db would say.
func (d *databases) fromTable(db *geo.DB, q *Query, other *geo.Other) bool {
	t, v, bits, ok := d.tableAt(db, q.Addr)
	if t == nil {
		return false
	}
	if !ok {
		precomputedMiss.Inc()
		return false
	}
	precomputedHit.Inc()
	var carrier uint32
	*other, carrier = t.d.value(v)
	// MaxMind's view is compared with the raw answer: leave it to learn.
	var isp *string
	if t.norm != nil && t.carriers == d.l.carriers.Load() && !other.OK {
		name := t.normISP(carrier)
		isp = &name
		q.normalized = true
	}
	t.d.location(v, bits, isp, &q.Loc)
	return true
}

// normalizedAt sets loc to the table's location of a through the carrier
// table, as the databases' link would answer it, and returns its value id
// plus one: 0, loc untouched, when the table does not place a, or when
// MaxMind's view is still to be compared with it.
func (d *databases) normalizedAt(a netip.Addr, loc *geo.Location) uint32 {
	t, v, bits, ok := d.tableAt(d.db.Load(), a)
	if !ok || t.norm == nil || t.carriers != d.l.carriers.Load() {
		return 0
	}
	otherOK, carrier := t.d.otherOK(v)
	if otherOK {
		return 0
	}
	name := t.normISP(carrier)
	t.d.location(v, bits, &name, loc)
	return v + 1
}

// Token is what an answer of the precomputed table for good depends on:
// under equal tokens, FromTable answers as LocateInto did.
type Token struct {
	pre       *netTable
	db        *geo.DB
	carriers  *geo.Carriers
	overrides *[]*overrides.Table
}

// Token is the locator's token now.
func (l *Locator) Token() Token {
	return Token{l.dbs.pre.Load(), l.dbs.db.Load(), l.carriers.Load(), l.over.tables.Load()}
}

// FromTable sets r to what LocateInto said of addr when it set r.Table to
// table and r.Bits to bits under tok, which must be the Token now: the
// table's location, and no override. False when tok has no such table.
func (l *Locator) FromTable(tok Token, addr netip.Addr, table uint32, bits uint8, r *Result) bool {
	t := tok.pre
	if t == nil || table == 0 || t.norm == nil || t.carriers != tok.carriers || int(table) > len(t.d.vals) {
		return false
	}
	v := table - 1
	_, carrier := t.d.otherOK(v)
	name := t.normISP(carrier)
	t.d.location(v, bits, &name, &r.Location)
	r.Key, r.Override, r.Table = KeyOf(addr.Unmap()), overrides.Match{}, table
	r.Scope = r.Bits
	tableHit(&r.Location)
	return true
}

// tableHit counts an answer of the table for good.
func tableHit(loc *geo.Location) {
	precomputedHit.Inc()
	if loc.Province != "" {
		dbHit.Inc()
	} else {
		dbMiss.Inc()
	}
}

// Placed are the clients the databases give IPv4 addresses, through the
// carrier table, each once, from the most addresses to the fewest (two
// may be equal): the MaxPlaced of the most addresses the table walked;
// nil without one (or with carrier lists, which place clients per /24).
// Built on the first call for a table; the caller must not change them.
func (l *Locator) Placed() *Places {
	t := l.placedTable()
	if t == nil {
		return nil
	}
	t.placed.once.Do(func() { t.placed.places = placedTop(t, MaxPlaced) })
	return t.placed.places
}

// placedTable is the table Placed reads, nil when there is none.
func (l *Locator) placedTable() *netTable {
	t := l.dbs.pre.Load()
	if t == nil || t.norm == nil || t.db != l.dbs.db.Load() || t.carriers != l.carriers.Load() || len(t.d.vals) == 0 {
		return nil
	}
	return t
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
	return t.upTo()
}

// upTo is the first address t did not walk.
func (t *netTable) upTo() netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(t.end))
	return netip.AddrFrom4(b)
}

// Tabled says whether the precomputation has run once (whatever it
// built); always false without one.
func (l *Locator) Tabled() bool { return l.tabled.Load() }
