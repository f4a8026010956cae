// Package locate turns a client address into a geo.Location through a chain
// of sources: an in-process cache per /24 (/48), the local databases, a Redis
// cache shared by every instance, and an online API that is asked
// asynchronously, behind a rate limit and a circuit breaker. A source is a
// Source; the chain asks them in order and lets the earlier ones learn what
// a later one found.
package locate

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/overrides"
)

var log = clog.NewWithPlugin("gslb")

// NoProvinceTTL is how long a location without a province (country level or
// unknown) stays in the cache, so that a refinement from Redis or the online
// API is picked up soon.
const NoProvinceTTL = time.Minute

// clockTick is the precision of cache expiry.
const clockTick = 100 * time.Millisecond

// Locator is the chain of sources. It is safe for concurrent use.
type Locator struct {
	sources []Source
	over    *overrideSource
	cache   *cache // the cache's entries; the process's shared cache once started
	dbs     *databases
	lists   *carrierLists // nil without carrier lists
	redis   *redisSource  // nil without Redis
	online  *onlineSource // nil without the online API
	refines bool          // a source after the databases may place a client per /24

	carriers atomic.Pointer[geo.Carriers]
	// tag identifies the content (databases, carrier table) behind the
	// cache entries this locator may read.
	tag atomic.Uint64

	size     int
	ttl      time.Duration
	shortTTL time.Duration
	now      func() time.Time
	// clock is now() in unix ns, refreshed every clockTick once started:
	// reading the time costs more than the rest of a cache hit.
	clock       atomic.Int64
	manualClock bool // tests drive now themselves
	stopClock   chan struct{}
	wg          sync.WaitGroup

	// The precomputation of the databases' IPv4 networks: repre is nil
	// without one; stopPre is set while it runs.
	pcfg    PrecomputeConfig
	repre   chan struct{}
	stopPre chan struct{}
	onTable func() // after every table change; nil: nothing
	tabled  atomic.Bool

	mu        sync.Mutex
	started   bool
	closed    bool
	startOnce sync.Once
	closeOnce sync.Once
}

// Result is what the chain knows about an address.
type Result struct {
	geo.Location
	Key      Key
	Override overrides.Match
	// Scope is the prefix length the answer holds for: the network of the
	// data that placed the client, or the key's /24 (/48) when a later
	// source may still place it per /24.
	Scope uint8
	// Table is the precomputed table's value id plus one when it placed
	// the client for good, and nothing overrode it (see FromTable); 0: not.
	Table uint32
}

// New builds a Locator from cfg, whose defaults it fills. It starts nothing
// and dials nothing; Start does.
func New(cfg Config) (*Locator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Locator{
		cache:    newCache(cfg.CacheSize),
		dbs:      &databases{},
		size:     cfg.CacheSize,
		ttl:      cfg.CacheTTL,
		shortTTL: min(NoProvinceTTL, cfg.CacheTTL),
		now:      time.Now,
	}
	l.dbs.l, l.dbs.files = l, cfg.DBFiles
	l.dbs.db.Store(cfg.DB)
	l.carriers.Store(cfg.Carriers)
	l.over = &overrideSource{}
	l.sources = []Source{l.over, &cacheSource{l}}
	if cfg.CarrierLists != nil {
		lists, err := newCarrierLists(l, *cfg.CarrierLists)
		if err != nil {
			return nil, &ConfigError{"carrier_lists", err}
		}
		l.lists = lists
		l.sources = append(l.sources, lists)
	}
	l.sources = append(l.sources, l.dbs)
	if cfg.Redis != nil {
		l.redis = newRedisSource(l, *cfg.Redis)
		l.sources = append(l.sources, l.redis)
	}
	if cfg.Online != nil {
		l.online = newOnlineSource(l, *cfg.Online, len(l.sources))
		l.sources = append(l.sources, l.online)
	}
	l.refines = l.sources[len(l.sources)-1] != Source(l.dbs)
	if cfg.Precompute != nil && !cfg.Precompute.Off {
		l.pcfg = cfg.Precompute.withDefaults()
		l.repre = make(chan struct{}, 1)
	}
	l.retag()
	return l, nil
}

// Start takes the process's shared cache, starts the cache clock and the
// Redis client (go-redis dials on first use). Call it from OnStartup,
// before queries.
func (l *Locator) Start() {
	l.startOnce.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return
		}
		l.cache = acquireCache(l.size, l.cache)
		l.started = true
		for _, s := range l.sources {
			if st, ok := s.(starter); ok {
				st.start()
			}
		}
		if !l.manualClock {
			l.clock.Store(time.Now().UnixNano())
			l.stopClock = make(chan struct{})
			l.wg.Add(1)
			go l.tick(l.stopClock)
		}
		if l.repre != nil {
			l.stopPre = make(chan struct{})
			l.wg.Add(1)
			go l.precompute(l.stopPre)
			l.signalPrecompute()
		}
	})
}

func (l *Locator) tick(stop chan struct{}) {
	defer l.wg.Done()
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			l.clock.Store(now.UnixNano())
		}
	}
}

// nowNano is the cache's notion of now.
func (l *Locator) nowNano() int64 {
	if n := l.clock.Load(); n != 0 {
		return n
	}
	return l.now().UnixNano()
}

// Close cancels in-flight online calls, waits for them, closes Redis and
// lets go of the cache. Call it from OnShutdown.
func (l *Locator) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		if l.stopClock != nil {
			close(l.stopClock)
		}
		if l.stopPre != nil {
			close(l.stopPre)
			l.stopPre = nil
		}
		started := l.started
		l.mu.Unlock()
		l.wg.Wait()
		var errs []error
		for _, s := range slices.Backward(l.sources) {
			if c, ok := s.(closer); ok {
				errs = append(errs, c.close())
			}
		}
		err = errors.Join(errs...)
		if started {
			releaseCache(l.size, l.cache)
		} else {
			l.cache.purge()
		}
	})
	return err
}

// SetDB swaps the local databases (after a reload).
func (l *Locator) SetDB(db *geo.DB) {
	l.dbs.db.Store(db)
	l.dbs.memo.Store(nil) // the old one's memo would keep it
	l.retag()
	l.signalPrecompute()
}

// DB is the local databases the chain reads now; nil: none.
func (l *Locator) DB() *geo.DB { return l.dbs.db.Load() }

// Files are the files of the chain's sources, for the reload path to
// watch.
func (l *Locator) Files() []string {
	var files []string
	for _, s := range l.sources {
		if r, ok := s.(Reopener); ok {
			files = append(files, r.Files()...)
		}
	}
	return files
}

// Reopen has every source with files of its own read them again (after
// one changed). A source that fails keeps what it had; the errors are
// joined.
func (l *Locator) Reopen() error {
	var errs []error
	for _, s := range l.sources {
		if r, ok := s.(Reopener); ok {
			if err := r.Reopen(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// SetCarriers swaps the carrier table (after a node table reload).
func (l *Locator) SetCarriers(c *geo.Carriers) {
	l.carriers.Store(c)
	l.retag()
	l.signalPrecompute()
	if l.lists != nil {
		l.lists.warnUnknown()
	}
}

// retag follows a content change: cache entries of the old content are no
// longer read.
func (l *Locator) retag() {
	t := l.dbs.db.Load().Digest()
	t ^= l.carriers.Load().Digest() * 0x9E3779B97F4A7C15
	if l.lists != nil {
		t ^= l.lists.sets.Load().set.Digest() * 0xC2B2AE3D27D4EB4F
		if l.lists.cfg.Outvote { // the same lists answer otherwise
			t ^= 0x165667B19E3779F9
		}
	}
	l.tag.Store(t)
}

var queryPool = sync.Pool{New: func() any { return new(Query) }}

// Locate returns what is known about addr. It never fails and waits at most
// the Redis timeout; an online lookup it sets off serves later queries.
func (l *Locator) Locate(ctx context.Context, addr netip.Addr) Result {
	var r Result
	l.LocateInto(ctx, addr, &r)
	return r
}

// LocateInto is Locate writing into r: a query's stack grows by copying,
// and a Result passed by value widens every frame it passes through.
func (l *Locator) LocateInto(ctx context.Context, addr netip.Addr, r *Result) {
	addr = addr.Unmap()
	k := KeyOf(addr)
	if bits, ok := geo.Special(addr); ok {
		l.special(addr, k, bits, r)
		return
	}
	// Pooled: a Query passed to the sources' interface methods would
	// escape, and a cache hit must not allocate. No source keeps q. It
	// comes back zeroed: set field by field, no literal on the stack.
	q := queryPool.Get().(*Query)
	q.Addr, q.Key, q.tag = addr, k, l.tag.Load()
	answered := len(l.sources)
	for i, s := range l.sources {
		if s.Locate(ctx, q) {
			answered = i
			break
		}
	}
	l.learn(ctx, q, answered)
	r.Location, r.Key, r.Override, r.Table = q.Loc, k, q.Override, q.table
	if q.Override != (overrides.Match{}) {
		r.Table = 0
	}
	r.Scope = max(q.Loc.Bits, q.Override.MinBits)
	*q = Query{}
	queryPool.Put(q)
	if r.Province == "" && l.refines {
		r.Scope = max(r.Scope, k.Bits())
	}
}

// special is what is known about a special-purpose address (a private
// network's resolver, loopback): only what the overrides and the pins say
// of it; else nothing, and it is decided without a location. Out of line:
// rare, and a query's stack must not carry its frame.
//
//go:noinline
func (l *Locator) special(addr netip.Addr, k Key, bits int, r *Result) {
	*r = Result{Location: geo.Location{Special: true, Bits: uint8(bits)}, Key: k, Scope: uint8(bits)}
	ts := l.over.tables.Load()
	if ts == nil {
		return
	}
	m := overrides.Lookup(*ts, addr)
	if m.Location == nil && m.Pin == nil {
		return
	}
	r.Override = m
	if m.Location != nil {
		r.Location = *m.Location.Location
		r.Location.Bits = m.LocBits
		l.carriers.Load().Apply(&r.Location)
	}
	r.Scope = max(r.Location.Bits, m.MinBits)
}

// learn maps q's carrier through the carrier table, once, and lets the
// learners before the source that answered (answered, or len(sources) when
// none was sure) keep it.
func (l *Locator) learn(ctx context.Context, q *Query, answered int) {
	if !q.normalized {
		c := l.carriers.Load()
		c.Apply(&q.Loc)
		applyList(q, c)
		q.normalized = true
	}
	final := answered < len(l.sources)
	for _, s := range l.sources[:answered] {
		if lr, ok := s.(Learner); ok {
			lr.Learn(ctx, q, final)
		}
	}
}
