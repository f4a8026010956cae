package config

import (
	"strings"
	"time"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/resolvers"

	"github.com/miekg/dns"
)

// parseResolvers reads `resolvers { beacon NAME; key_file FILE; beacon_ttl
// N; window D; half_life D; max_resolvers N; min_samples N; source_joins
// N; population on|off }`. The key file is read when the block loads.
func parseResolvers(c *caddyfile.Dispenser, path func(string) string) (*resolvers.Config, error) {
	rc := resolvers.DefaultConfig()
	rc.Line = c.Line()
	err := subBlock(c, func() error {
		var err error
		var n uint64
		switch c.Val() {
		case "beacon":
			if !c.NextArg() {
				return c.ArgErr()
			}
			rc.Beacon = dns.Fqdn(strings.ToLower(c.Val()))
			if _, ok := dns.IsDomainName(rc.Beacon); !ok {
				return c.Errf("resolvers: beacon %q is not a domain name", c.Val())
			}
		case "key_file":
			if !c.NextArg() {
				return c.ArgErr()
			}
			rc.KeyFile = path(c.Val())
		case "beacon_ttl":
			n, err = uintArg(c, 1, 3600)
			rc.TTL = uint32(n)
		case "window":
			rc.Window, err = durationArg(c, time.Second)
		case "half_life":
			rc.HalfLife, err = durationArg(c, time.Second)
		case "max_resolvers":
			n, err = uintArg(c, 1, 1e6)
			rc.MaxResolvers = int(n)
		case "min_samples":
			n, err = uintArg(c, 1, 1e9)
			rc.MinSamples = float64(n)
		case "source_joins":
			n, err = uintArg(c, 1, 1e6)
			rc.SourceJoins = int(n)
		case "cycle":
			rc.Cycle, err = durationArg(c, 100*time.Millisecond) // tests fold fast
		case "population":
			if !c.NextArg() {
				return c.ArgErr()
			}
			switch c.Val() {
			case "on":
				rc.Population = true
			case "off":
				rc.Population = false
			default:
				return c.Errf("resolvers: population is on or off, not %q", c.Val())
			}
		default:
			return c.Errf("resolvers: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["resolvers"]))
		}
		if err != nil {
			return err
		}
		if args := c.RemainingArgs(); len(args) != 0 {
			return c.Errf("resolvers: unexpected argument %q", args[0])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rc.Beacon != "" && rc.KeyFile == "" {
		return nil, c.Errf("resolvers at line %d: a beacon needs key_file FILE (the key its labels are signed with)", rc.Line)
	}
	return &rc, nil
}
