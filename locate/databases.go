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
	db    atomic.Pointer[geo.DB]  // nil: Redis and the online API only
	files geo.Files               // what Reopen opens; zero: nothing
	memo  atomic.Pointer[netMemo] // of the DB it names; replaced after a reload
}

func (d *databases) Name() string { return "db" }

func (d *databases) Locate(_ context.Context, q *Query) bool {
	if db := d.db.Load(); db != nil {
		m := d.memoOf(db)
		v, ok := m.find(q.Addr)
		if !ok {
			var n uint8
			v.loc, v.other, n = db.CompareNet(q.Addr)
			m.add(q.Addr, n, v.loc, v.other)
		}
		q.Loc = v.loc
		if v.other.OK {
			d.compare(q.Loc, v.other)
		}
	}
	if q.Loc.Province != "" {
		dbHit.Inc()
		return true
	}
	dbMiss.Inc()
	return false
}

// memoOf returns db's network memo.
func (d *databases) memoOf(db *geo.DB) *netMemo {
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
func (d *databases) compare(loc geo.Location, other geo.Other) {
	if loc.Province != "" && other.Province != "" && loc.Province != other.Province {
		disagreeProvince.Inc()
	}
	c := d.l.carriers.Load()
	c.Apply(&loc)
	if mm := c.Carrier(other.ASN, other.ISP); loc.ISP != "" && mm != "" && loc.ISP != mm {
		disagreeCarrier.Inc()
	}
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
	d.l.SetDB(db)
	return nil
}
