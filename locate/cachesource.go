package locate

import (
	"context"

	"github.com/gslbdns/gslb/geo"
)

// cacheSource is the link after the overrides: the process's location
// cache (CLOCK-evicted, see cache) of what the chain found before. An
// address the precomputed table places for good (a province, or nothing
// after the databases to refine it) is answered from the table here, as
// the databases' link would, and not cached.
type cacheSource struct{ l *Locator }

// Name is "lru", the layer's label value since before the cache was CLOCK.
func (s *cacheSource) Name() string { return "lru" }

func (s *cacheSource) Locate(_ context.Context, q *Query) bool {
	// What the precomputed table places for good needs neither the cache
	// nor a place in it: a lookup without a lock, and no entry evicted.
	// Written in place: q is on the heap, a Location on this frame would
	// deepen every query's stack.
	if v := s.l.dbs.normalizedAt(q.Addr, &q.Loc); v != 0 {
		if q.Loc.Province != "" || !s.l.refines {
			q.normalized, q.table = true, v
			tableHit(&q.Loc)
			return true
		}
		q.Loc = geo.Location{}
	}
	return s.cached(q)
}

// cached is Locate from the process cache, out of line: its Location
// copy would deepen the frame of every query the table answers.
//
//go:noinline
func (s *cacheSource) cached(q *Query) bool {
	loc, ok := s.l.cache.get(q.Key, s.l.nowNano(), q.tag)
	if !ok {
		cacheMiss.Inc()
		return false
	}
	cacheHit.Inc()
	// A refinement keeps its origin: the log should say the paid or
	// shared layer placed this client, not just that it was cached.
	if loc.Source != geo.SourceRedis && loc.Source != geo.SourceOnline {
		loc.Source = geo.SourceCache
	}
	q.Loc, q.normalized = loc, true
	return true
}

// Learn stores q.Loc with the TTL its precision deserves.
// A location that holds for less than the key's block (a carrier list's
// /25, a database's /26) is not stored: it would answer for the rest of
// the block.
func (s *cacheSource) Learn(_ context.Context, q *Query, _ bool) {
	l := s.l
	if q.Loc.Bits > q.Key.Bits() {
		return
	}
	ttl := l.ttl
	if q.Loc.Province == "" {
		ttl = l.shortTTL
	}
	now := l.nowNano()
	l.cache.add(q.Key, q.Loc, now, now+int64(ttl), q.tag)
}
