package locate

import (
	"context"

	"github.com/gslbdns/gslb/geo"
)

// lruSource is the chain's first link: the process LRU of what the chain
// found before.
type lruSource struct{ l *Locator }

func (s *lruSource) Name() string { return "lru" }

func (s *lruSource) Locate(_ context.Context, q *Query) bool {
	loc, ok := s.l.cache.get(q.Key, s.l.nowNano(), s.l.tag.Load())
	if !ok {
		lruMiss.Inc()
		return false
	}
	lruHit.Inc()
	// A refinement keeps its origin: the log should say the paid or
	// shared layer placed this client, not just that it was cached.
	if loc.Source != geo.SourceRedis && loc.Source != geo.SourceOnline {
		loc.Source = geo.SourceLRU
	}
	q.Loc, q.normalized = loc, true
	return true
}

// Learn stores q.Loc with the TTL its precision deserves.
func (s *lruSource) Learn(_ context.Context, q *Query, _ bool) {
	l := s.l
	ttl := l.ttl
	if q.Loc.Province == "" {
		ttl = l.shortTTL
	}
	now := l.nowNano()
	l.cache.add(q.Key, q.Loc, now, now+int64(ttl), l.tag.Load())
}
