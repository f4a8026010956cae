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
	db    atomic.Pointer[geo.DB] // nil: Redis and the online API only
	files geo.Files              // what Reopen opens; zero: nothing
}

func (d *databases) Name() string { return "db" }

func (d *databases) Locate(_ context.Context, q *Query) bool {
	if db := d.db.Load(); db != nil {
		var other geo.Other
		q.Loc, other = db.Compare(q.Addr)
		if other.OK {
			d.compare(q.Loc, other)
		}
	}
	if q.Loc.Province != "" {
		dbHit.Inc()
		return true
	}
	dbMiss.Inc()
	return false
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
