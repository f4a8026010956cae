// Package locate resolves a client address to a geo.Location through layers
// (issue 4, seed 000 §2.3, §4.4, §4.5): an in-process LRU per /24 (/48), the
// local MaxMind database, a Redis cache shared by instances, and an online
// API that is asked asynchronously, behind a rate limit and a circuit breaker.
package locate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/recovery"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

var log = clog.NewWithPlugin("gslb")

// NoProvinceTTL is how long a location without a province (country level or
// unknown) stays in the LRU, so that a refinement from Redis or the online
// API is picked up soon.
const NoProvinceTTL = time.Minute

// clockTick is the precision of LRU expiry.
const clockTick = 100 * time.Millisecond

// Locator is the layered address -> location lookup. It is safe for
// concurrent use.
type Locator struct {
	db       atomic.Pointer[geo.DB]
	tag      atomic.Uint64 // the database's digest: the cache entries this locator may read
	cache    *cache        // replaced by the process's shared cache at Start
	size     int
	ttl      time.Duration
	shortTTL time.Duration
	now      func() time.Time
	// clock is now() in unix ns, refreshed every clockTick once started:
	// reading the time costs more than the rest of an LRU hit.
	clock       atomic.Int64
	manualClock bool // tests drive now themselves
	stopClock   chan struct{}

	redisCfg     *RedisConfig
	redis        atomic.Pointer[redisConn]
	redisBreaker breaker

	onlineCfg     *OnlineConfig
	http          *http.Client
	limiter       *rate.Limiter
	onlineBreaker breaker
	maxInflight   int

	ctx    context.Context // cancelled by Close: aborts online calls
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[key]struct{} // /24s being asked online
	closed   bool
	started  bool

	startOnce, closeOnce sync.Once
}

type redisConn struct{ c redis.UniversalClient }

// New builds a Locator. It starts nothing and dials nothing; Start does.
func New(cfg Config) (*Locator, error) {
	if cfg.CacheSize < 0 {
		return nil, errors.New("cache_size is negative")
	}
	if cfg.CacheTTL < 0 {
		return nil, errors.New("cache_ttl is negative")
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	l := &Locator{
		cache:    newCache(cfg.CacheSize),
		size:     cfg.CacheSize,
		ttl:      cfg.CacheTTL,
		shortTTL: min(NoProvinceTTL, cfg.CacheTTL),
		now:      time.Now,
		inflight: make(map[key]struct{}),
	}
	l.db.Store(cfg.DB)
	l.tag.Store(cfg.DB.Digest())
	l.ctx, l.cancel = context.WithCancel(context.Background())
	if cfg.Redis != nil {
		rc := *cfg.Redis
		if err := rc.Validate(); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		l.redisCfg = &rc
		l.redisBreaker = breaker{threshold: redisBreakerFailures, window: redisBreakerWindow}
	}
	if cfg.Online != nil {
		oc := *cfg.Online
		if err := oc.Validate(); err != nil {
			return nil, fmt.Errorf("online: %w", err)
		}
		oc.Headers = oc.Headers.Clone()
		l.onlineCfg = &oc
		l.maxInflight = int(2*oc.MaxQPS) + 1
		l.limiter = rate.NewLimiter(rate.Limit(oc.MaxQPS), max(1, int(oc.MaxQPS)))
		l.onlineBreaker = breaker{
			threshold: oc.BreakerFailures,
			window:    oc.BreakerWindow,
			onChange: func(open bool) {
				if open {
					OnlineBreakerOpen.Set(1)
					log.Warningf("Online geo API breaker open for %v after %d failures", oc.BreakerWindow, oc.BreakerFailures)
				} else {
					OnlineBreakerOpen.Set(0)
					log.Infof("Online geo API breaker closed")
				}
			},
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = l.maxInflight
		l.http = &http.Client{Transport: tr, Timeout: oc.Timeout, CheckRedirect: sameOrigin}
	}
	return l, nil
}

// Start starts the cache clock and the Redis client (go-redis dials on first
// use). Call it from OnStartup.
func (l *Locator) Start() {
	l.startOnce.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return
		}
		l.cache = acquireCache(l.size, l.cache)
		l.started = true
		if l.redisCfg != nil {
			l.redis.Store(&redisConn{c: newRedisClient(l.redisCfg)})
		}
		if !l.manualClock {
			l.clock.Store(time.Now().UnixNano())
			l.stopClock = make(chan struct{})
			l.wg.Add(1)
			go l.tick(l.stopClock)
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

// Close cancels in-flight online calls, waits for them and closes Redis.
// Call it from OnShutdown.
func (l *Locator) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		if l.stopClock != nil {
			close(l.stopClock)
		}
		l.mu.Unlock()
		l.cancel()
		l.wg.Wait()
		if l.http != nil {
			l.http.CloseIdleConnections()
		}
		if l.onlineBreaker.isOpen() {
			OnlineBreakerOpen.Set(0)
		}
		if rc := l.redis.Swap(nil); rc != nil {
			err = rc.c.Close()
		}
		if l.started {
			releaseCache(l.size, l.cache)
		} else {
			l.cache.purge()
		}
	})
	return err
}

// SetDB swaps the local database (after a reload). Cache entries of the
// old content are no longer read.
func (l *Locator) SetDB(db *geo.DB) {
	l.db.Store(db)
	l.tag.Store(db.Digest())
}

// Locate returns what is known about addr. It never fails and waits at most
// the Redis timeout; an online lookup it triggers serves later queries.
func (l *Locator) Locate(ctx context.Context, addr netip.Addr) geo.Location {
	addr = addr.Unmap()
	if bits, ok := geo.Special(addr); ok {
		return geo.Location{Special: true, Bits: uint8(bits)}
	}
	k := keyOf(addr)
	now := l.nowNano()
	if loc, ok := l.cache.get(k, now, l.tag.Load()); ok {
		lruHit.Inc()
		// A refinement keeps its origin: the log should say the paid or
		// shared layer placed this client, not just that it was cached.
		if loc.Source != geo.SourceRedis && loc.Source != geo.SourceOnline {
			loc.Source = geo.SourceLRU
		}
		return loc
	}
	lruMiss.Inc()

	var loc geo.Location
	if db := l.db.Load(); db != nil {
		loc = db.Lookup(addr)
	}
	if loc.Province != "" {
		dbHit.Inc()
		l.store(k, loc, now)
		return loc
	}
	dbMiss.Inc()

	if rc := l.redis.Load(); rc != nil {
		if rloc, ok := l.redisGet(ctx, rc.c, addr); ok {
			l.store(k, rloc, now)
			return rloc
		}
	}
	// Cache the coarse answer first: a fast online result must overwrite it.
	l.store(k, loc, now)
	if l.onlineCfg != nil {
		l.refine(addr, k, loc)
	}
	return loc
}

// store puts loc into the LRU with the TTL its precision deserves.
func (l *Locator) store(k key, loc geo.Location, now int64) {
	ttl := l.ttl
	if loc.Province == "" {
		ttl = l.shortTTL
	}
	intern(&loc)
	l.cache.add(k, loc, now, now+int64(ttl), l.tag.Load())
}

// intern shares the few distinct names between a million cache entries.
func intern(loc *geo.Location) {
	for _, s := range [...]*string{&loc.Country, &loc.Continent, &loc.Province, &loc.City, &loc.ISP} {
		if *s != "" {
			*s = unique.Make(*s).Value()
		}
	}
}

// refine asks the online API about addr's /24 in the background, at most
// once at a time per /24, within max_qps and while the breaker allows it.
func (l *Locator) refine(addr netip.Addr, k key, known geo.Location) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if _, busy := l.inflight[k]; busy {
		l.mu.Unlock()
		return
	}
	now := l.now()
	if len(l.inflight) >= l.maxInflight || !l.limiter.AllowN(now, 1) || !l.onlineBreaker.allow(now) {
		l.mu.Unlock()
		onlineRefused.Inc()
		return
	}
	l.inflight[k] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()

	go func() {
		defer l.wg.Done()
		defer l.release(k)
		defer recovery.Guard("online")
		loc, err := l.fetch(l.ctx, netOf(addr), known)
		if l.ctx.Err() != nil { // closing: the answer no longer matters
			return
		}
		// Only an unreachable or failing API trips the breaker: an answer
		// that can't be used says nothing about the API's health, and
		// counting it would let any client switch the layer off.
		l.onlineBreaker.done(l.now(), err == nil || errors.Is(err, errInvalid))
		switch {
		case err == nil:
			onlineOK.Inc()
			onlineHit.Inc()
			l.store(k, loc, l.nowNano())
			if rc := l.redis.Load(); rc != nil {
				l.redisSet(l.ctx, rc.c, addr, &loc)
			}
		case errors.Is(err, errInvalid):
			onlineInvalid.Inc()
			onlineMiss.Inc()
			log.Debugf("Online geo API answer for %s rejected: %v", addr, err)
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			onlineTimeout.Inc()
			onlineError.Inc()
			log.Debugf("Online geo API timeout for %s: %v", addr, err)
		default:
			onlineErr.Inc()
			onlineError.Inc()
			log.Debugf("Online geo API error for %s: %v", addr, err)
		}
	}()
}

func (l *Locator) release(k key) {
	l.mu.Lock()
	delete(l.inflight, k)
	l.mu.Unlock()
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
