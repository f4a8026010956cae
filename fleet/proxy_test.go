package fleet

import (
	"testing"

	"github.com/gslbdns/gslb/internal/testredis"

	"github.com/redis/go-redis/v9"
)

// startVia starts a member whose Redis connections go through p.
func startVia(t testing.TB, p *testredis.Proxy, id string, vantage Vantage, edit func(*Config)) *member {
	t.Helper()
	return start(t, nil, id, vantage, func(c *Config) {
		cl := redis.NewClient(&redis.Options{
			Addr: p.Addr(), DialTimeout: testTimeout, ReadTimeout: testTimeout, WriteTimeout: testTimeout,
			PoolTimeout: testTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true,
		})
		t.Cleanup(func() { cl.Close() })
		c.Client = cl
		if edit != nil {
			edit(c)
		}
	})
}
