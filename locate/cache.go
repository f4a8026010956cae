package locate

import (
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/offheap"
)

// cache holds the chain's answers per /24 (/48), in small fixed-size
// entries: the key, the id of an interned location, an expiry in seconds,
// and the id of the content that produced it, found through an
// open-addressing index of slot numbers. A shard allocates its slots once,
// at its bound, on its first insert, and its index when it doubles: an
// eviction allocates nothing, an insert only at those doublings. Slots
// and index hold no pointer, and large ones live outside the Go heap: the
// collector neither scans them nor lets the heap grow by their size again.
// Entries are evicted by CLOCK, so a hit only sets a bit; the bound is
// exactly the configured size. Shards keep parallel hits off each other's
// lock.
type cache struct {
	shards []shard
	shift  uint // 64 - log2(len(shards))
	locs   interner[geo.Location]
	tags   tagTable
}

// shard is one lock's worth of the cache.
type shard struct {
	mu sync.Mutex
	// index holds slot+1 (0: empty) at the key's hash, linear probing; a
	// power of two at least twice the bound, so probes stay short.
	index []int32
	// ents are the slots, side by side: a hit reads one.
	ents  []entry
	hand  int
	limit int
}

// entry is one slot: 24 bytes.
type entry struct {
	key Key
	loc uint32 // interned location id, of the location without its Bits
	exp uint32 // expiry, unix seconds
	tag uint8
	ref bool // CLOCK's second chance
	// bits is the location's Bits: networks placed alike but merged to
	// other lengths then share one interned location.
	bits uint8
}

// minShardSize keeps small caches in one shard, so their bound stays exact
// and their eviction order plain.
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
	for i := range c.shards {
		sz := size / n
		if i < size%n {
			sz++
		}
		c.shards[i].limit = sz
	}
	c.locs.init()
	c.locs.own = ownLocation
	// A cache dropped unpurged still unmaps its slots.
	runtime.AddCleanup(c, func(shards []shard) {
		for i := range shards {
			offheap.Free(shards[i].index)
			offheap.Free(shards[i].ents)
		}
	}, c.shards)
	return c
}

func (c *cache) shard(k Key) *shard {
	if c.shift == 64 {
		return &c.shards[0]
	}
	h := uint64(k) * 0xBF58476D1CE4E5B9
	return &c.shards[h>>c.shift]
}

// secs turns unix ns into unix seconds, rounded up: room until 2106.
func (c *cache) secs(ns int64) uint32 {
	s := (ns + 1e9 - 1) / 1e9
	return uint32(min(max(s, 0), 1<<32-1))
}

// get returns the unexpired entry for k that tag's content produced.
func (c *cache) get(k Key, now int64, tag uint64) (geo.Location, bool) {
	t, ok := c.tags.find(tag)
	if !ok {
		return geo.Location{}, false
	}
	s := c.shard(k)
	s.mu.Lock()
	i, ok := s.find(k)
	if !ok || s.ents[i].exp <= c.secs(now) || s.ents[i].tag != t {
		s.mu.Unlock()
		return geo.Location{}, false
	}
	e := &s.ents[i]
	e.ref = true
	id, bits := e.loc, e.bits
	s.mu.Unlock()
	loc, ok := c.locs.at(id)
	if !ok {
		return geo.Location{}, false
	}
	loc.Bits = bits
	return loc, true
}

// add stores loc until exp. A province-level entry that is still valid is
// not replaced by one without a province: a late, coarser writer must not
// undo a refinement.
func (c *cache) add(k Key, loc geo.Location, now, exp int64, tag uint64) {
	bits := loc.Bits
	loc.Bits = 0
	id, ok := c.locs.id(&loc)
	t, tok := c.tags.of(tag)
	if !ok || !tok {
		c.purge() // the interned locations or the tags outgrew the cache: start over
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	if i, ok := s.find(k); ok {
		e := &s.ents[i]
		if old, ok := c.locs.at(e.loc); ok && loc.Province == "" && e.exp > c.secs(now) && e.tag == t && old.Province != "" {
			s.mu.Unlock()
			return
		}
		e.loc, e.bits, e.exp, e.tag, e.ref = id, bits, c.secs(exp), t, false
		s.mu.Unlock()
		return
	}
	if len(s.ents) < s.limit && 2*(len(s.ents)+1) > len(s.index) {
		s.grow()
	}
	i := s.slot()
	s.ents[i] = entry{key: k, loc: id, bits: bits, exp: c.secs(exp), tag: t}
	s.insert(k, i)
	s.mu.Unlock()
	CacheEntries.Inc()
}

// pos is k's first place in the index.
func (s *shard) pos(k Key) int {
	return int((uint64(k) * 0x9E3779B97F4A7C15) >> 32 & uint64(len(s.index)-1))
}

// find returns k's slot. Callers hold s.mu.
func (s *shard) find(k Key) (int, bool) {
	if len(s.index) == 0 {
		return 0, false
	}
	m := len(s.index) - 1
	for p := s.pos(k); ; p = (p + 1) & m {
		v := s.index[p]
		if v == 0 {
			return 0, false
		}
		if s.ents[v-1].key == k {
			return int(v - 1), true
		}
	}
}

// insert indexes slot i for k, which is not indexed. Callers hold s.mu.
func (s *shard) insert(k Key, i int) {
	m := len(s.index) - 1
	p := s.pos(k)
	for s.index[p] != 0 {
		p = (p + 1) & m
	}
	s.index[p] = int32(i + 1)
}

// remove drops k, which is indexed, from the index, shifting back the
// entries after it that may no longer be found past the hole. Callers
// hold s.mu; s.ents still has every indexed key.
func (s *shard) remove(k Key) {
	m := len(s.index) - 1
	p := s.pos(k)
	for s.ents[s.index[p]-1].key != k {
		p = (p + 1) & m
	}
	for {
		s.index[p] = 0
		q := p
		for {
			q = (q + 1) & m
			v := s.index[q]
			if v == 0 {
				return
			}
			// An entry whose place is cyclically in (p, q] is still found.
			if h := s.pos(s.ents[v-1].key); (p < q && p < h && h <= q) || (p > q && (p < h || h <= q)) {
				continue
			}
			s.index[p] = v
			p = q
			break
		}
	}
}

// grow doubles the index, which stays at most half full: sized to the
// entries, not the bound, a partly filled cache keeps its index small
// enough for the CPU's caches.
func (s *shard) grow() {
	old := s.index
	s.index = offheap.Make[int32](max(8, 2*len(s.index)))
	offheap.Free(old)
	for j := range s.ents {
		s.insert(s.ents[j].key, j)
	}
}

// slot returns a free slot: a new one below the limit, else the one CLOCK
// evicts. Callers hold s.mu.
func (s *shard) slot() int {
	if s.ents == nil {
		s.ents = offheap.Make[entry](s.limit)[:0] // at the bound, once
	}
	if len(s.ents) < s.limit {
		s.ents = append(s.ents, entry{})
		return len(s.ents) - 1
	}
	for {
		if s.hand >= len(s.ents) {
			s.hand = 0
		}
		i := s.hand
		s.hand++
		if s.ents[i].ref {
			s.ents[i].ref = false
			continue
		}
		s.remove(s.ents[i].key)
		CacheEntries.Dec()
		return i
	}
}

func (c *cache) purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		CacheEntries.Sub(float64(len(s.ents)))
		offheap.Free(s.index)
		offheap.Free(s.ents)
		s.index, s.ents, s.hand = nil, nil, 0
		s.mu.Unlock()
	}
	c.locs.reset()
	c.tags.reset()
}

func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.ents)
		s.mu.Unlock()
	}
	return n
}

// interner gives each distinct value a small id. Values are few next to
// the entries that share them (a City network and an ASN make one
// location). Its index holds a hash of each value, not the value: the
// chunks have the one copy.
type interner[T comparable] struct {
	mu     sync.Mutex
	seed   maphash.Seed
	ids    map[uint64]uint32 // a value's hash: the first value with it
	dup    map[T]uint32      // the values whose hash an earlier one has
	chunks atomic.Pointer[[]*[1 << chunkBits]T]
	own    func(*T) // makes a value to keep its own copy; nil: none
	n      uint32
	limit  uint32 // the most values; 0: maxInterned
	epoch  atomic.Uint32
}

// An id is the interner's epoch and an index: an id handed out before a
// reset is not found after it.
const (
	chunkBits   = 12
	indexBits   = 22
	maxInterned = 1 << indexBits // past this many distinct values, start over
)

func (in *interner[T]) init() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seed = maphash.MakeSeed()
	in.ids = make(map[uint64]uint32)
	in.dup = nil
	in.chunks.Store(&[]*[1 << chunkBits]T{})
	in.n = 0
	in.epoch.Add(1)
}

func (in *interner[T]) reset() { in.init() }

// ownLocation gives a location the cache keeps strings of its own: one
// from the precomputed table holds parts of the table's one string,
// which it would keep alive after the table is replaced.
func ownLocation(l *geo.Location) {
	l.Country, l.Continent, l.Province = strings.Clone(l.Country), strings.Clone(l.Continent), strings.Clone(l.Province)
	l.City, l.ISP = strings.Clone(l.City), strings.Clone(l.ISP)
}

// id returns v's id, interning it; false when the interner is full.
func (in *interner[T]) id(v *T) (uint32, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	h := maphash.Comparable(in.seed, *v)
	chunks := *in.chunks.Load()
	first, taken := in.ids[h]
	if taken {
		if n := first & (maxInterned - 1); chunks[n>>chunkBits][n&(1<<chunkBits-1)] == *v {
			return first, true
		}
		if id, ok := in.dup[*v]; ok {
			return id, true
		}
	}
	if in.n == maxInterned || in.limit != 0 && in.n >= in.limit {
		return 0, false
	}
	n := in.n
	if int(n>>chunkBits) == len(chunks) {
		grown := append(chunks[:len(chunks):len(chunks)], new([1 << chunkBits]T))
		in.chunks.Store(&grown)
		chunks = grown
	}
	w := *v
	if in.own != nil {
		in.own(&w)
	}
	chunks[n>>chunkBits][n&(1<<chunkBits-1)] = w
	id := in.epoch.Load()<<indexBits | n
	if taken {
		if in.dup == nil {
			in.dup = make(map[T]uint32)
		}
		in.dup[w] = id
	} else {
		in.ids[h] = id
	}
	in.n++
	return id, true
}

// at returns the value of id, when id is of this epoch. The id came
// from a shard read under its lock, after id stored the value.
func (in *interner[T]) at(id uint32) (T, bool) {
	if p := in.ref(id); p != nil {
		return *p, true
	}
	var zero T
	return zero, false
}

// ref is at without the copy: the stored value, never to be written; nil
// when id is not of this epoch.
func (in *interner[T]) ref(id uint32) *T {
	if id>>indexBits != in.epoch.Load()&(1<<(32-indexBits)-1) {
		return nil
	}
	n := id & (maxInterned - 1)
	chunks := *in.chunks.Load()
	if int(n>>chunkBits) >= len(chunks) {
		return nil
	}
	return &chunks[n>>chunkBits][n&(1<<chunkBits-1)]
}

// tagTable numbers the content digests entries come from: few at a time.
type tagTable struct {
	mu   sync.Mutex
	tags atomic.Pointer[[]uint64]
}

// find returns tag's number without adding it.
func (t *tagTable) find(tag uint64) (uint8, bool) {
	p := t.tags.Load()
	if p == nil {
		return 0, false
	}
	for i, x := range *p {
		if x == tag {
			return uint8(i), true
		}
	}
	return 0, false
}

// of returns tag's number, adding it; false past 256 tags.
func (t *tagTable) of(tag uint64) (uint8, bool) {
	if i, ok := t.find(tag); ok {
		return i, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur []uint64
	if p := t.tags.Load(); p != nil {
		cur = *p
	}
	for i, x := range cur {
		if x == tag {
			return uint8(i), true
		}
	}
	if len(cur) == 256 {
		return 0, false
	}
	next := append(cur[:len(cur):len(cur)], tag)
	t.tags.Store(&next)
	return uint8(len(next) - 1), true
}

func (t *tagTable) reset() {
	t.mu.Lock()
	t.tags.Store(nil)
	t.mu.Unlock()
}
