package config

import (
	"strconv"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/sign"
)

// parseDNSSEC reads `dnssec KEYFILE... [publish KEYFILE...] [{ denial
// nsec|nsec3 [ITERATIONS [SALT]]|black_lies }]`.
func parseDNSSEC(c *caddyfile.Dispenser, root string) (sign.Config, error) {
	var args []string
	block := false
	for c.NextArg() {
		if c.Val() == "{" {
			block = true
			break
		}
		args = append(args, c.Val())
	}
	sc, err := sign.ParseArgs(root, args)
	if err != nil {
		return sign.Config{}, c.Err(err.Error())
	}
	if !block {
		return sc, nil
	}
	for c.Next() {
		switch c.Val() {
		case "}":
			return sc, noArgs(c)
		case "denial":
			if err := sign.ParseDenial(&sc, c.RemainingArgs()); err != nil {
				return sign.Config{}, c.Err(err.Error())
			}
		default:
			return sign.Config{}, c.Errf("dnssec: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["dnssec"]))
		}
	}
	return sign.Config{}, c.EOFErr()
}

// parseRRL reads `rrl off` or `rrl [{ answers RATE; denials RATE; errors
// RATE; window DURATION; slip N; prefix V4 V6; exempt CIDR...|none;
// log_only }]` over r's defaults.
func parseRRL(c *caddyfile.Dispenser, r *rrl.Config) error {
	if !c.NextArg() {
		return nil
	}
	switch c.Val() {
	case "off":
		r.Off = true
		return noArgs(c)
	case "{":
	default:
		return c.Errf("rrl: unexpected argument %q (want off or a block)", c.Val())
	}
	return blockBody(c, func() error {
		switch prop := c.Val(); prop {
		case "answers", "denials", "errors":
			n, err := uintArg(c, 0, rrl.MaxRate)
			if err != nil {
				return err
			}
			r.Rates[map[string]rrl.Kind{"answers": rrl.Answer, "denials": rrl.Denial, "errors": rrl.Error}[prop]] = uint32(n)
		case "window":
			d, err := durationArg(c, 1e9)
			if err != nil {
				return err
			}
			if d > rrl.MaxWindow {
				return c.Errf("window: %s is longer than %s", d, rrl.MaxWindow)
			}
			r.Window = d
		case "slip":
			n, err := uintArg(c, 0, 10)
			if err != nil {
				return err
			}
			r.Slip = uint32(n)
		case "prefix":
			args := c.RemainingArgs()
			if len(args) != 2 {
				return c.Errf("prefix: want V4 V6 prefix lengths, such as 24 56")
			}
			v4, err4 := strconv.ParseUint(args[0], 10, 8)
			v6, err6 := strconv.ParseUint(args[1], 10, 8)
			if err4 != nil || v4 < 8 || v4 > 32 {
				return c.Errf("prefix: V4 %q is not a whole number in 8..32", args[0])
			}
			if err6 != nil || v6 < 16 || v6 > 64 {
				return c.Errf("prefix: V6 %q is not a whole number in 16..64", args[1])
			}
			r.Prefix4, r.Prefix6 = uint8(v4), uint8(v6)
		case "exempt":
			args := c.RemainingArgs()
			if len(args) == 1 && args[0] == "none" {
				r.Exempt = nil
				return nil
			}
			if len(args) == 0 {
				return c.ArgErr()
			}
			ps, err := prefixList(c, "exempt", args)
			if err != nil {
				return err
			}
			r.Exempt = ps
		case "log_only":
			r.LogOnly = true
		default:
			return c.Errf("rrl: unknown property %q%s", prop, suggest.Hint(prop, properties["rrl"]))
		}
		return nil
	})
}
