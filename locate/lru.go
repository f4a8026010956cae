package locate

import (
	"net/netip"
	"sync"

	"github.com/gslbdns/gslb/geo"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// key is a client's /24 (IPv4, as IPv4-mapped) or /48 (IPv6), comparable and
// hashable without allocation.
type key struct{ hi, lo uint64 }

func keyOf(addr netip.Addr) key {
	if addr.Is4() {
		a := addr.As4()
		return key{lo: 0xffff<<32 | uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8}
	}
	a := addr.As16()
	return key{hi: uint64(a[0])<<56 | uint64(a[1])<<48 | uint64(a[2])<<40 | uint64(a[3])<<32 |
		uint64(a[4])<<24 | uint64(a[5])<<16}
}

type entry struct {
	loc geo.Location
	exp int64  // unix nanoseconds
	tag uint64 // the content (databases, carriers) that produced loc
}

// shard is one lock's worth of the LRU.
type shard struct {
	mu  sync.Mutex
	lru *simplelru.LRU[key, entry]
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
	onEvict := func(key, entry) { CacheEntries.Dec() }
	for i := range c.shards {
		sz := size / n
		if i < size%n {
			sz++
		}
		c.shards[i].lru, _ = simplelru.NewLRU[key, entry](sz, onEvict)
	}
	return c
}

func (c *cache) shard(k key) *shard {
	if c.shift == 64 {
		return &c.shards[0]
	}
	h := (k.hi ^ k.lo*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
	return &c.shards[h>>c.shift]
}

// get returns the unexpired entry for k that tag's content produced.
func (c *cache) get(k key, now int64, tag uint64) (geo.Location, bool) {
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
func (c *cache) add(k key, loc geo.Location, now, exp int64, tag uint64) {
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
