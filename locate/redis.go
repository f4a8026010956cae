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
	"time"

	"github.com/gslbdns/gslb/geo"

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
// redisBreakerWindow, then one command tries again.
const (
	redisBreakerFailures = 5
	redisBreakerWindow   = 10 * time.Second
)

// redisKey returns the hash key and field of addr's /24 (/48).
func redisKey(addr netip.Addr) (k, field string) {
	b := make([]byte, 0, 40)
	b = append(b, redisKeyPrefix...)
	if addr.Is4() {
		a := addr.As4()
		b = strconv.AppendUint(b, uint64(a[0]), 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(a[1]), 10)
		return string(b), strconv.Itoa(int(a[2]))
	}
	a := addr.As16()
	b = strconv.AppendUint(b, uint64(a[0])<<8|uint64(a[1]), 16)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(a[2])<<8|uint64(a[3]), 16)
	return string(b), strconv.FormatUint(uint64(a[4])<<8|uint64(a[5]), 16)
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

func newRedisClient(c *RedisConfig) redis.UniversalClient {
	setRedisLogger.Do(func() { redis.SetLogger(&redisLogger{}) })
	o := &redis.UniversalOptions{
		Addrs:      c.Addrs,
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
	return redis.NewUniversalClient(o)
}

// redisGet reads addr's /24 from Redis. It returns ok=false on a miss, an
// error or while the Redis breaker is open.
func (l *Locator) redisGet(ctx context.Context, rc redis.UniversalClient, addr netip.Addr) (geo.Location, bool) {
	if !l.redisBreaker.allow(l.now()) {
		return geo.Location{}, false
	}
	k, field := redisKey(addr)
	ctx, cancel := context.WithTimeout(ctx, l.redisCfg.Timeout)
	v, err := rc.HGet(ctx, k, field).Result()
	cancel()
	if errors.Is(err, context.Canceled) { // the query went away: not Redis's fault
		l.redisBreaker.abort()
		return geo.Location{}, false
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		l.redisBreaker.done(l.now(), false)
		RedisErrors.Inc()
		redisError.Inc()
		log.Debugf("Redis HGET %s %s: %v", k, field, err)
		return geo.Location{}, false
	}
	l.redisBreaker.done(l.now(), true)
	if err != nil {
		redisMiss.Inc()
		return geo.Location{}, false
	}
	loc, err := decode(v)
	if err != nil {
		redisMiss.Inc()
		return geo.Location{}, false
	}
	redisHit.Inc()
	loc.Bits = max(loc.Bits, minBits(addr))
	loc.Source = geo.SourceRedis
	return loc, true
}

// redisSet stores loc for addr's /24 and refreshes the key's TTL.
func (l *Locator) redisSet(ctx context.Context, rc redis.UniversalClient, addr netip.Addr, loc *geo.Location) {
	if !l.redisBreaker.allow(l.now()) {
		return
	}
	k, field := redisKey(addr)
	ctx, cancel := context.WithTimeout(ctx, max(l.redisCfg.Timeout, redisWriteTimeout))
	defer cancel()
	_, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, field, encode(loc))
		p.Expire(ctx, k, l.redisCfg.TTL)
		return nil
	})
	l.redisBreaker.done(l.now(), err == nil)
	if err != nil {
		RedisErrors.Inc()
		log.Debugf("Redis HSET %s %s: %v", k, field, err)
	}
}

// redisWriteTimeout: writes happen off the query path and may wait longer.
const redisWriteTimeout = 200 * time.Millisecond

// minBits is the cache granularity: /24 for IPv4, /48 for IPv6.
func minBits(addr netip.Addr) uint8 {
	if addr.Is4() {
		return 24
	}
	return 48
}

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
