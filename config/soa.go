package config

import (
	"strings"

	"github.com/coredns/caddy/caddyfile"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/suggest"
)

// parseSOA reads `soa { serial N; refresh S; retry S; expire S; minimum S; mname NAME; rname NAME }`.
func parseSOA(c *caddyfile.Dispenser, s *SOA) error {
	err := subBlock(c, func() error {
		prop := c.Val()
		switch prop {
		case "serial", "refresh", "retry", "expire", "minimum":
			n, err := uintArg(c, 1, 1<<31-1)
			if err != nil {
				return err
			}
			*map[string]*uint32{"serial": &s.Serial, "refresh": &s.Refresh, "retry": &s.Retry,
				"expire": &s.Expire, "minimum": &s.Minimum}[prop] = uint32(n)
		case "mname", "rname":
			if !c.NextArg() {
				return c.ArgErr()
			}
			name := dns.Fqdn(strings.ToLower(c.Val()))
			if _, ok := dns.IsDomainName(name); !ok || strings.Contains(name, "@") || name == "." {
				return c.Errf("soa: %s %q is not a domain name (a mailbox is written hostmaster.example.org)", prop, c.Val())
			}
			if prop == "mname" {
				s.MName = name
			} else {
				s.RName = name
			}
		default:
			return c.Errf("soa: unknown property %q%s", prop, suggest.Hint(prop, properties["soa"]))
		}
		if args := c.RemainingArgs(); len(args) != 0 {
			return c.Errf("soa: unexpected argument %q", args[0])
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case s.Retry >= s.Refresh:
		return c.Errf("soa: retry %d must be below refresh %d", s.Retry, s.Refresh)
	case s.Expire < s.Refresh:
		return c.Errf("soa: expire %d must not be below refresh %d", s.Expire, s.Refresh)
	}
	return nil
}
