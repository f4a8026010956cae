package locate

import (
	"context"
	"sync/atomic"

	"github.com/gslbdns/gslb/overrides"
)

// overrideSource is the chain's first link: the operator's corrections,
// the admin API's pins before the file's overrides. It comes before the
// cache, so that a new or changed override applies to the next query without
// touching the cache.
type overrideSource struct {
	tables atomic.Pointer[[]*overrides.Table]
}

func (o *overrideSource) Name() string { return "override" }

func (o *overrideSource) Locate(_ context.Context, q *Query) bool {
	ts := o.tables.Load()
	if ts == nil {
		return false
	}
	q.Override = overrides.Lookup(*ts, q.Addr)
	if m := q.Override.Location; m != nil {
		q.Loc = *m.Location
		q.Loc.Bits = q.Override.LocBits
		overrideHit.Inc()
		return true
	}
	return false
}

// SetOverrides sets the override tables, in order of precedence.
func (l *Locator) SetOverrides(tables ...*overrides.Table) {
	n := 0
	for _, t := range tables {
		n += t.Len()
	}
	if n == 0 {
		l.over.tables.Store(nil)
		return
	}
	l.over.tables.Store(&tables)
}
