package config

import (
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/internal/suggest"
)

// Fleet is the fleet block: instances with the same Name share drains,
// pins, the canary and probe verdicts through the redis block's server.
type Fleet struct {
	Name              string
	Member            string // unique in the fleet; "": hostname and server port, set by ParseController
	Carrier, Province string // the vantage of this instance's probes
	ProbeSource       netip.Addr
	Quorum            float64 // 0: the fleet's default
	Probers           int     // 0: all
	Line              int
}

// parseFleet reads `fleet NAME { vantage CARRIER [PROVINCE]; probe_source
// ADDR; quorum SHARE; probers N; member ID }`.
func parseFleet(c *caddyfile.Dispenser) (*Fleet, error) {
	f := &Fleet{Line: c.Line()}
	if !c.NextArg() {
		return nil, c.Err("fleet: NAME is required")
	}
	f.Name = c.Val()
	if f.Name == "" || strings.ContainsAny(f.Name, "{}") {
		return nil, c.Errf("fleet: NAME %q must be non-empty and without braces", f.Name)
	}
	err := subBlock(c, func() error {
		switch c.Val() {
		case "vantage":
			args := c.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return c.Err("fleet: vantage CARRIER [PROVINCE] is required")
			}
			f.Carrier = strings.ToLower(args[0])
			if len(args) == 2 {
				f.Province = args[1]
			}
		case "probe_source":
			if !c.NextArg() {
				return c.ArgErr()
			}
			a, err := netip.ParseAddr(c.Val())
			if err != nil || a.Zone() != "" {
				return c.Errf("fleet: probe_source: %q is not an IP address", c.Val())
			}
			f.ProbeSource = a.Unmap()
		case "quorum":
			if !c.NextArg() {
				return c.ArgErr()
			}
			q, err := strconv.ParseFloat(c.Val(), 64)
			if err != nil || math.IsNaN(q) || q <= 0 || q > 1 {
				return c.Errf("fleet: quorum: %q is not a share in (0, 1]", c.Val())
			}
			f.Quorum = q
		case "probers":
			n, err := uintArg(c, 1, 1000)
			if err != nil {
				return err
			}
			f.Probers = int(n)
		case "member":
			if !c.NextArg() || c.Val() == "" {
				return c.Err("fleet: member ID is required")
			}
			f.Member = c.Val()
		default:
			return c.Errf("fleet: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["fleet"]))
		}
		if args := c.RemainingArgs(); len(args) != 0 {
			return c.Errf("fleet: unexpected argument %q", args[0])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.Carrier == "" {
		return nil, c.Errf("fleet %s: vantage CARRIER is required (the carrier this instance's probes see from)", f.Name)
	}
	return f, nil
}
