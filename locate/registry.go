package locate

import "sync"

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
