package gslb

import (
	"fmt"
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
)

// checkOrder refuses a server block where cache runs before gslb: cache
// keys answers without the client subnet, so every client would get the
// node chosen for the first one. The chain follows dirs, the build's
// directive order; cached says whether the block has a cache.
func checkOrder(dirs []string, cached bool) error {
	if !cached {
		return nil
	}
	g, c := slices.Index(dirs, pluginName), slices.Index(dirs, "cache")
	if c < 0 || g < c {
		return nil
	}
	return fmt.Errorf("the plugin chain runs cache before gslb, so cached answers would ignore where clients are: " +
		"rebuild CoreDNS with the plugin.cfg line \"gslb:github.com/gslbdns/gslb\" before \"cache:cache\"")
}

// orderCheck is an OnStartup callback: the block's handlers exist then.
func orderCheck(cfg *dnsserver.Config) func() error {
	return func() error {
		if err := checkOrder(dnsserver.Directives, cfg.Handler("cache") != nil); err != nil {
			return plugin.Error(pluginName, err)
		}
		return nil
	}
}
