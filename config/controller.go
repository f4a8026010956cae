package config

import (
	"os"

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
	o, err := Parse(&c.Dispenser, c.ServerBlockKeys, dnsserver.GetConfig(c).Root, seen)
	if err == nil && o.Fleet != nil && o.Fleet.Member == "" {
		// Unique per host and server: instances of one host listen on
		// different ports.
		host, _ := os.Hostname()
		o.Fleet.Member = host + ":" + dnsserver.GetConfig(c).Port
	}
	return o, err
}
