package locate

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// Defaults of the Corefile options.
const (
	DefaultCacheSize       = 1000000
	DefaultCacheTTL        = 12 * time.Hour
	DefaultRedisTimeout    = 20 * time.Millisecond
	DefaultRedisTTL        = 24 * time.Hour
	DefaultOnlineTimeout   = 800 * time.Millisecond
	DefaultMaxQPS          = 50
	DefaultBreakerFailures = 10
	DefaultBreakerWindow   = 10 * time.Minute
)

// FormatIPAPI selects the adapter for ip-api.com's field names.
const FormatIPAPI = "ip-api"

// Config configures a Locator.
type Config struct {
	DB        *geo.DB       // may be nil: Redis and the online API only
	DBFiles   geo.Files     // the files DB was opened from, which Reopen reads again
	Carriers  *geo.Carriers // nil: geo.DefaultCarriers
	CacheSize int           // cache entries; 0 = DefaultCacheSize
	CacheTTL  time.Duration // 0 = DefaultCacheTTL
	Redis     *RedisConfig  // nil = no shared cache
	Online    *OnlineConfig // nil = no online API
	// CarrierLists are carrier CIDR lists whose carrier wins over every
	// database's; nil = none.
	CarrierLists *CarrierListConfig
	// Precompute walks the databases' IPv4 networks in the background
	// once they load; nil: not at all.
	Precompute *PrecomputeConfig
}

// RedisConfig is the `redis` block. Several Addrs mean a cluster, MasterName
// a sentinel setup (Addrs are then the sentinels).
type RedisConfig struct {
	Addrs      []string
	Username   string // an ACL user; "" for the default user
	Password   string
	DB         int
	TLS        bool
	MasterName string
	Timeout    time.Duration // per command; 0 = DefaultRedisTimeout
	TTL        time.Duration // key TTL, refreshed on write; 0 = DefaultRedisTTL
}

// OnlineConfig is the `online` block.
type OnlineConfig struct {
	URL             string // contains {ip}
	Headers         http.Header
	Timeout         time.Duration // 0 = DefaultOnlineTimeout
	MaxQPS          float64       // 0 = DefaultMaxQPS
	BreakerFailures int           // 0 = DefaultBreakerFailures
	BreakerWindow   time.Duration // 0 = DefaultBreakerWindow
	Format          string        // "" = our JSON schema, or FormatIPAPI
}

// ConfigError is a bad configuration of one layer; Layer names it
// ("redis", "online", "cache", "carrier_lists") for the caller to point at
// the option.
type ConfigError struct {
	Layer string
	Err   error
}

func (e *ConfigError) Error() string { return e.Layer + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// WithDefaults returns c with its zero fields, and its layers', defaulted.
func (c Config) WithDefaults() Config {
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultCacheTTL
	}
	if c.Carriers == nil {
		c.Carriers = geo.DefaultCarriers()
	}
	if c.Redis != nil {
		r := c.Redis.WithDefaults()
		c.Redis = &r
	}
	if c.Online != nil {
		o := c.Online.WithDefaults()
		c.Online = &o
	}
	return c
}

// Validate checks c; an error is a *ConfigError.
func (c Config) Validate() error {
	if c.CacheSize < 0 {
		return &ConfigError{"cache", errors.New("cache_size is negative")}
	}
	if c.CacheTTL < 0 {
		return &ConfigError{"cache", errors.New("cache_ttl is negative")}
	}
	if p := c.Precompute; p != nil && (p.MaxBytes < 0 || p.MaxTime < 0) {
		return &ConfigError{"precompute", errors.New("budget is negative")}
	}
	if c.Redis != nil {
		if err := c.Redis.Validate(); err != nil {
			return &ConfigError{"redis", err}
		}
	}
	if c.Online != nil {
		if err := c.Online.Validate(); err != nil {
			return &ConfigError{"online", err}
		}
	}
	return nil
}

// WithDefaults returns c with its zero fields defaulted.
func (c RedisConfig) WithDefaults() RedisConfig {
	if c.Timeout == 0 {
		c.Timeout = DefaultRedisTimeout
	}
	if c.TTL == 0 {
		c.TTL = DefaultRedisTTL
	}
	return c
}

// Validate checks c; zero fields are valid (they take defaults).
func (c RedisConfig) Validate() error {
	if len(c.Addrs) == 0 {
		return errors.New("no address")
	}
	for _, a := range c.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("address %q is not host:port", a)
		}
	}
	if c.DB < 0 {
		return fmt.Errorf("db %d is negative", c.DB)
	}
	if c.DB != 0 && len(c.Addrs) > 1 && c.MasterName == "" {
		return fmt.Errorf("db %d is not supported by a cluster", c.DB)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout %v is negative", c.Timeout)
	}
	if c.TTL < 0 || (c.TTL > 0 && c.TTL < time.Second) {
		return fmt.Errorf("ttl %v is below 1s", c.TTL)
	}
	return nil
}

// WithDefaults returns c with its zero fields defaulted.
func (c OnlineConfig) WithDefaults() OnlineConfig {
	if c.Timeout == 0 {
		c.Timeout = DefaultOnlineTimeout
	}
	if c.MaxQPS == 0 {
		c.MaxQPS = DefaultMaxQPS
	}
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerWindow == 0 {
		c.BreakerWindow = DefaultBreakerWindow
	}
	return c
}

// Validate checks c; zero fields are valid (they take defaults). The URL
// shows redacted: its query string may hold a key.
func (c OnlineConfig) Validate() error {
	if !strings.Contains(c.URL, "{ip}") {
		return fmt.Errorf("URL %q has no {ip}", redactURL(c.URL))
	}
	u, err := url.Parse(strings.ReplaceAll(c.URL, "{ip}", "192.0.2.1"))
	if err != nil {
		return fmt.Errorf("URL %q: %w", redactURL(c.URL), errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q is not http or https", redactURL(c.URL))
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", redactURL(c.URL))
	}
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", c.Timeout)
	case c.MaxQPS < 0:
		return fmt.Errorf("max_qps %v is negative", c.MaxQPS)
	case c.BreakerFailures < 0:
		return fmt.Errorf("breaker failures %d is negative", c.BreakerFailures)
	case c.BreakerWindow < 0:
		return fmt.Errorf("breaker duration %v is negative", c.BreakerWindow)
	}
	if c.Format != "" && c.Format != FormatIPAPI {
		return fmt.Errorf("unknown format %q (want %q)", c.Format, FormatIPAPI)
	}
	return nil
}
