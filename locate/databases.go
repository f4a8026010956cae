package locate

import (
	"context"
	"sync/atomic"

	"github.com/gslbdns/gslb/geo"
)

// databases is the local databases' link: a location with a province is
// final.
type databases struct {
	db atomic.Pointer[geo.DB] // nil: Redis and the online API only
}

func (d *databases) Name() string { return "db" }

func (d *databases) Locate(_ context.Context, q *Query) bool {
	if db := d.db.Load(); db != nil {
		q.Loc = db.Lookup(q.Addr)
	}
	if q.Loc.Province != "" {
		dbHit.Inc()
		return true
	}
	dbMiss.Inc()
	return false
}
