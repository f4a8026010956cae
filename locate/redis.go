package locate

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/ratelog"

	"github.com/redis/go-redis/v9"
)

// Redis layout: one hash per /16 (IPv6 /32), one field per /24 (IPv6 /48).
//
//	key   gslb:geo:v1:223.5        field 5       (223.5.5.0/24)
//	key   gslb:geo:v1:2001:db8     field 85a3    (2001:db8:85a3::/48)
//
// The value is the encoding below, versioned by its first field so that a
// future layout is read as a miss instead of garbage:
//
//	1|country|continent|province|city|isp|asn|lat|lon|radius|bits
//
// lat and lon are empty when the location has no coordinates; '|' inside a
// name is replaced by a space.
const (
	redisKeyPrefix = "gslb:geo:v1:"
	encVersion     = "1"
	encFields      = 11
)

// Redis breaker: after this many consecutive errors Redis is skipped for
// redisBreakerWindow, then one command tries again. A second: a failed-over
// Redis is used again within a second of its promotion, and a dead one
// costs one query a second at most its timeout.
const (
	redisBreakerFailures = 5
	redisBreakerWindow   = time.Second
)

// redisKey returns the hash key and field of addr's /24 (/48).
func redisKey(addr netip.Addr) (k, field string) { return keyField(KeyOf(addr)) }

func keyField(key Key) (k, field string) {
	a := key.Prefix().Addr()
	b := make([]byte, 0, 40)
	b = append(b, redisKeyPrefix...)
	if a.Is4() {
		a := a.As4()
		b = strconv.AppendUint(b, uint64(a[0]), 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(a[1]), 10)
		return string(b), strconv.Itoa(int(a[2]))
	}
	a16 := a.As16()
	b = strconv.AppendUint(b, uint64(a16[0])<<8|uint64(a16[1]), 16)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(a16[2])<<8|uint64(a16[3]), 16)
	return string(b), strconv.FormatUint(uint64(a16[4])<<8|uint64(a16[5]), 16)
}

func encode(l *geo.Location) string {
	var b strings.Builder
	b.Grow(64)
	b.WriteString(encVersion)
	for _, s := range [...]string{l.Country, l.Continent, l.Province, l.City, l.ISP} {
		b.WriteByte('|')
		b.WriteString(strings.ReplaceAll(s, "|", " "))
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatUint(uint64(l.ASN), 10))
	b.WriteByte('|')
	if l.HasCoords {
		b.WriteString(strconv.FormatFloat(l.Lat, 'f', 4, 64))
	}
	b.WriteByte('|')
	if l.HasCoords {
		b.WriteString(strconv.FormatFloat(l.Lon, 'f', 4, 64))
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatUint(uint64(l.Radius), 10))
	b.WriteByte('|')
	b.WriteString(strconv.FormatUint(uint64(l.Bits), 10))
	return b.String()
}

var errEncoding = errors.New("bad location encoding")

func decode(s string) (geo.Location, error) {
	f := strings.Split(s, "|")
	if len(f) != encFields || f[0] != encVersion || f[1] == "" {
		return geo.Location{}, errEncoding
	}
	l := geo.Location{Country: f[1], Continent: f[2], Province: f[3], City: f[4], ISP: f[5]}
	asn, err1 := strconv.ParseUint(f[6], 10, 32)
	radius, err2 := strconv.ParseUint(f[9], 10, 16)
	bits, err3 := strconv.ParseUint(f[10], 10, 8)
	if err := errors.Join(err1, err2, err3); err != nil || bits > 128 {
		return geo.Location{}, errEncoding
	}
	l.ASN, l.Radius, l.Bits = uint32(asn), uint16(radius), uint8(bits)
	if f[7] != "" || f[8] != "" {
		lat, err1 := strconv.ParseFloat(f[7], 64)
		lon, err2 := strconv.ParseFloat(f[8], 64)
		if err1 != nil || err2 != nil || !validCoords(lat, lon) {
			return geo.Location{}, errEncoding
		}
		l.HasCoords, l.Lat, l.Lon = true, lat, lon
	}
	return l, nil
}

func validCoords(lat, lon float64) bool {
	if math.IsNaN(lat) || math.IsNaN(lon) || math.Abs(lat) > 90 || math.Abs(lon) > 180 {
		return false
	}
	return lat != 0 || lon != 0
}

// NewRedisClient is a client with the redis block's options and bounds,
// for the other users of its server (a fleet).
func NewRedisClient(c *RedisConfig) redis.UniversalClient { return newRedisClient(c) }

func newRedisClient(c *RedisConfig) redis.UniversalClient {
	setRedisLogger.Do(func() { redis.SetLogger(&redisLogger{}) })
	o := &redis.UniversalOptions{
		Addrs:      c.Addrs,
		Username:   c.Username,
		Password:   c.Password,
		DB:         c.DB,
		MasterName: c.MasterName,
		// A query waits at most Timeout, whatever the server does.
		DialTimeout:           c.Timeout,
		ReadTimeout:           c.Timeout,
		WriteTimeout:          c.Timeout,
		PoolTimeout:           c.Timeout,
		ContextTimeoutEnabled: true,
		DialerRetries:         1, // the next query retries; go-redis redials by itself
		DisableIdentity:       true,
	}
	if c.TLS {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.MasterName != "" || len(o.Addrs) < 2 {
		return redis.NewUniversalClient(o)
	}
	co := o.Cluster()
	// go-redis reloads its slot map on MOVED and READONLY only, and else
	// once a minute: a master that died answers neither, so its slots
	// stay on it. A short period and a reload on every connection error
	// find the promoted replica within about a second of its promotion.
	co.ClusterStateReloadInterval = clusterReload
	cc := redis.NewClusterClient(co)
	cc.AddHook(reloadOnError{cc})
	return cc
}

// clusterReload is the period of a cluster client's slot map reload.
const clusterReload = time.Second

// reloadOnError has a cluster client reload its slot map after an error
// that is not Redis's answer (a refused or broken connection, a timeout).
// Reloads are asynchronous and coalesced by go-redis.
type reloadOnError struct{ c *redis.ClusterClient }

func (h reloadOnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(err)
		return err
	}
}

func (h reloadOnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after(err)
		return err
	}
}

func (h reloadOnError) after(err error) {
	var rerr redis.Error
	if err == nil || errors.Is(err, context.Canceled) || (errors.As(err, &rerr) && !isClusterDown(err)) {
		return
	}
	h.c.ReloadState(context.Background())
}

// isClusterDown is Redis's answer while no node serves a slot: the map
// changes next.
func isClusterDown(err error) bool {
	return strings.HasPrefix(err.Error(), "CLUSTERDOWN") || strings.HasPrefix(err.Error(), "TRYAGAIN")
}

// redisSource is the shared cache's link. It is asked only when the
// databases gave no province, and learns what the online API finds.
type redisSource struct {
	l       *Locator
	cfg     RedisConfig
	client  atomic.Pointer[redisConn]
	breaker breaker
	authLog ratelog.Limit
}

type redisConn struct{ c redis.UniversalClient }

func newRedisSource(l *Locator, cfg RedisConfig) *redisSource {
	return &redisSource{l: l, cfg: cfg, breaker: breaker{threshold: redisBreakerFailures, window: redisBreakerWindow}}
}

func (r *redisSource) Name() string { return "redis" }

func (r *redisSource) start() { r.client.Store(&redisConn{c: newRedisClient(&r.cfg)}) }

func (r *redisSource) close() error {
	if rc := r.client.Swap(nil); rc != nil {
		return rc.c.Close()
	}
	return nil
}

// Locate reads q's /24 from Redis. A miss, an error or an open breaker is
// not final.
func (r *redisSource) Locate(ctx context.Context, q *Query) bool {
	rc := r.client.Load()
	if rc == nil || !r.breaker.allow(r.l.now()) {
		return false
	}
	k, field := keyField(q.Key)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	v, err := rc.c.HGet(ctx, k, field).Result()
	cancel()
	if errors.Is(err, context.Canceled) { // the query went away: not Redis's fault
		r.breaker.abort()
		return false
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		r.breaker.done(r.l.now(), false)
		RedisErrors.Inc()
		if isRedisAuth(err) {
			redisAuth.Inc()
			if ok, _ := r.authLog.Allow(authLogEvery); ok {
				log.Warningf("Redis refused the password (check the redis block's password): %v", err)
			}
			return false
		}
		redisError.Inc()
		log.Debugf("Redis HGET %s %s: %v", k, field, err)
		return false
	}
	r.breaker.done(r.l.now(), true)
	if err != nil {
		redisMiss.Inc()
		return false
	}
	loc, err := decode(v)
	if err != nil {
		redisMiss.Inc()
		return false
	}
	redisHit.Inc()
	loc.Bits = max(loc.Bits, q.Key.Bits())
	loc.Source = geo.SourceRedis
	q.Loc = loc
	return true
}

// Learn stores a final location for q's /24 and refreshes the key's TTL.
// It runs off the query path, in the online lookup's goroutine.
func (r *redisSource) Learn(ctx context.Context, q *Query, final bool) {
	rc := r.client.Load()
	if !final || rc == nil || !r.breaker.allow(r.l.now()) {
		return
	}
	k, field := keyField(q.Key)
	ctx, cancel := context.WithTimeout(ctx, max(r.cfg.Timeout, redisWriteTimeout))
	defer cancel()
	_, err := rc.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, field, encode(&q.Loc))
		p.Expire(ctx, k, r.cfg.TTL)
		return nil
	})
	r.breaker.done(r.l.now(), err == nil)
	if err != nil {
		RedisErrors.Inc()
		if isRedisAuth(err) {
			if ok, _ := r.authLog.Allow(authLogEvery); ok {
				log.Warningf("Redis refused the password (check the redis block's password): %v", err)
			}
			return
		}
		log.Debugf("Redis HSET %s %s: %v", k, field, err)
	}
}

// redisWriteTimeout: writes happen off the query path and may wait longer.
const redisWriteTimeout = 200 * time.Millisecond

// redisLogger sends go-redis's own messages (dial failures while Redis is
// down) to the CoreDNS log, at most one every redisLogEvery.
type redisLogger struct {
	mu   sync.Mutex
	last time.Time
}

const redisLogEvery = 30 * time.Second

func (r *redisLogger) Printf(_ context.Context, format string, v ...any) {
	r.mu.Lock()
	now := time.Now()
	if now.Sub(r.last) < redisLogEvery {
		r.mu.Unlock()
		return
	}
	r.last = now
	r.mu.Unlock()
	log.Warningf("Redis: "+format, v...)
}

var setRedisLogger sync.Once
