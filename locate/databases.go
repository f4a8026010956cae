package locate

import (
	"context"
	"sync/atomic"

	"github.com/gslbdns/gslb/geo"
)

// databases is the local databases' link: a location with a province is
// final.
type databases struct {
	l  *Locator
	db atomic.Pointer[geo.DB] // nil: Redis and the online API only
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

// compare counts where MaxMind and the IPIP.net database, which decided
// loc, disagree on an address both place in China.
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
