package locate

import (
	"context"
	"sync/atomic"

	"github.com/gslbdns/gslb/geo"
)

// databases is the local databases' link: a location with a province is
// final.
type databases struct {
	l     *Locator
	db    atomic.Pointer[geo.DB]   // nil: Redis and the online API only
	files geo.Files                // what Reopen opens; zero: nothing
	memo  atomic.Pointer[netMemo]  // of the DB it names; replaced after a reload
	pre   atomic.Pointer[netTable] // IPv4 walked at load time; read when it names db
}

func (d *databases) Name() string { return "db" }

func (d *databases) Locate(_ context.Context, q *Query) bool {
	if db := d.db.Load(); db != nil {
		var other geo.Other
		if !d.fromTable(db, q, &other) && !d.memoOf(db).find(q.Addr, &q.Loc, &other) {
			d.fill(db, q, &other)
		}
		if other.OK {
			d.compare(&q.Loc, &other)
			if q.list.found && d.l.lists.cfg.Outvote {
				d.vote(q, &other)
			}
		}
	}
	if q.Loc.Province != "" {
		dbHit.Inc()
		return true
	}
	dbMiss.Inc()
	return false
}

// fill asks db for what the memo does not know, and remembers it. Out of
// line, like the rest of the rare paths: a query's stack must not carry
// their frames.
//
//go:noinline
func (d *databases) fill(db *geo.DB, q *Query, other *geo.Other) {
	var n uint8
	q.Loc, *other, n = db.CompareNet(q.Addr)
	d.memoOf(db).add(q.Addr, n, q.Loc, *other)
}

// memoOf returns db's network memo.
func (d *databases) memoOf(db *geo.DB) *netMemo {
	if m := d.memo.Load(); m != nil && m.db == db {
		return m
	}
	return d.newMemo(db)
}

//go:noinline
func (d *databases) newMemo(db *geo.DB) *netMemo {
	m := d.memo.Load()
	if m != nil && m.db == db {
		return m
	}
	fresh := newNetMemo(db)
	if !d.memo.CompareAndSwap(m, fresh) {
		if m := d.memo.Load(); m != nil && m.db == db {
			return m
		}
	}
	return fresh
}

// compare counts where MaxMind and the Chinese database (IPIP.net or
// ip2region) that decided loc disagree on an address both place in China.
//
//go:noinline
func (d *databases) compare(at *geo.Location, other *geo.Other) {
	loc := *at
	if loc.Province != "" && other.Province != "" && loc.Province != other.Province {
		disagreeProvince.Inc()
	}
	c := d.l.carriers.Load()
	c.Apply(&loc)
	if mm := c.Carrier(other.ASN, other.ISP); loc.ISP != "" && mm != "" && loc.ISP != mm {
		disagreeCarrier.Inc()
	}
}

// vote marks the list's carrier outvoted when MaxMind and the Chinese
// database that decided agree on another one.
//
//go:noinline
func (d *databases) vote(q *Query, other *geo.Other) {
	c := d.l.carriers.Load()
	loc := q.Loc
	c.Apply(&loc)
	mm := c.Carrier(other.ASN, other.ISP)
	q.list.outvoted = mm != "" && loc.ISP == mm && mm != c.Carrier(0, q.list.carrier)
}

// Files are the database files, for the reload path to watch.
func (d *databases) Files() []string {
	return d.files.Paths()
}

// Reopen opens the database files again and swaps them in.
func (d *databases) Reopen() error {
	if len(d.Files()) == 0 {
		return nil
	}
	db, err := geo.OpenFiles(d.files)
	if err != nil {
		return err
	}
	// At once: the new data answers from the swap on, walked per new
	// network until its table, built in the background, is ready.
	d.l.SetDB(db)
	return nil
}
