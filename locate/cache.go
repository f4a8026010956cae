package locate

import (
	"context"
	"sync"
	"unique"

	"github.com/gslbdns/gslb/geo"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

type entry struct {
	loc geo.Location
	exp int64  // unix nanoseconds
	tag uint64 // the content (databases, carriers) that produced loc
}

// shard is one lock's worth of the LRU.
type shard struct {
	mu  sync.Mutex
	lru *simplelru.LRU[Key, entry]
}

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
	loc := q.Loc
	intern(&loc)
	now := l.nowNano()
	l.cache.add(q.Key, loc, now, now+int64(ttl), l.tag.Load())
}

// intern shares the few distinct names between a million cache entries.
func intern(loc *geo.Location) {
	for _, s := range [...]*string{&loc.Country, &loc.Continent, &loc.Province, &loc.City, &loc.ISP} {
		if *s != "" {
			*s = unique.Make(*s).Value()
		}
	}
}

// cache is an LRU of final locations, sharded by key hash so that parallel
// hits rarely share a lock. The total bound is exactly the configured size.
type cache struct {
	shards []shard
	shift  uint // 64 - log2(len(shards))
}

// minShardSize keeps small caches in one shard, so their bound stays a true LRU.
const minShardSize = 4096

func newCache(size int) *cache {
	n := 1
	for n < 64 && size/(n*2) >= minShardSize {
		n *= 2
	}
	c := &cache{shards: make([]shard, n), shift: 64}
	for m := n; m > 1; m >>= 1 {
		c.shift--
	}
	onEvict := func(Key, entry) { CacheEntries.Dec() }
	for i := range c.shards {
		sz := size / n
		if i < size%n {
			sz++
		}
		c.shards[i].lru, _ = simplelru.NewLRU[Key, entry](sz, onEvict)
	}
	return c
}

func (c *cache) shard(k Key) *shard {
	if c.shift == 64 {
		return &c.shards[0]
	}
	h := uint64(k) * 0xBF58476D1CE4E5B9
	return &c.shards[h>>c.shift]
}

// get returns the unexpired entry for k that tag's content produced.
func (c *cache) get(k Key, now int64, tag uint64) (geo.Location, bool) {
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.lru.Get(k)
	s.mu.Unlock()
	if !ok || now >= e.exp || e.tag != tag {
		return geo.Location{}, false
	}
	return e.loc, true
}

// add stores loc until exp. A province-level entry that is still valid is
// not replaced by one without a province: a late, coarser writer must not
// undo a refinement.
func (c *cache) add(k Key, loc geo.Location, now, exp int64, tag uint64) {
	s := c.shard(k)
	s.mu.Lock()
	old, existed := s.lru.Peek(k)
	if existed && loc.Province == "" && old.loc.Province != "" && now < old.exp && old.tag == tag {
		s.mu.Unlock()
		return
	}
	s.lru.Add(k, entry{loc: loc, exp: exp, tag: tag})
	s.mu.Unlock()
	if !existed {
		CacheEntries.Inc()
	}
}

func (c *cache) purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.lru.Purge()
		s.mu.Unlock()
	}
}

func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}

// caches are the process's location caches by size: a Corefile reload
// hands the new instance the old one's cache, so it starts warm instead of
// asking Redis and the online API again. Entries carry the digest of the
// content that produced them, so instances with other databases or
// carriers may share a cache without reading each other's answers.
var caches = struct {
	sync.Mutex
	m map[int]*sharedCache
}{m: map[int]*sharedCache{}}

type sharedCache struct {
	c    *cache
	refs int
}

// acquireCache returns the process's cache of that size, or registers own.
func acquireCache(size int, own *cache) *cache {
	caches.Lock()
	defer caches.Unlock()
	s := caches.m[size]
	if s == nil {
		s = &sharedCache{c: own}
		caches.m[size] = s
	}
	s.refs++
	return s.c
}

// releaseCache drops a use of c and empties it when nobody uses it.
func releaseCache(size int, c *cache) {
	caches.Lock()
	s := caches.m[size]
	if s == nil || s.c != c {
		caches.Unlock()
		c.purge()
		return
	}
	s.refs--
	last := s.refs == 0
	if last {
		delete(caches.m, size)
	}
	caches.Unlock()
	if last {
		c.purge()
	}
}
