package config

import (
	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

// uniqueKey is the instance storage key of what the Corefile's gslb
// blocks claimed.
type uniqueKey struct{}

// ParseController is Parse for a directive's setup: the server block's
// keys and root, and what earlier gslb blocks of the Corefile claimed,
// come from the controller.
func ParseController(c *caddy.Controller) (*Options, error) {
	seen, _ := c.Get(uniqueKey{}).(Unique)
	if seen == nil {
		seen = Unique{}
		c.Set(uniqueKey{}, seen)
	}
	return Parse(&c.Dispenser, c.ServerBlockKeys, dnsserver.GetConfig(c).Root, seen)
}
