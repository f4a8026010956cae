package gslb

import (
	"fmt"
	"net/netip"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/sign"
	"github.com/gslbdns/gslb/table"
)

const pluginName = config.Name

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	g, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	c.OnStartup(orderCheck(dnsserver.GetConfig(c)))
	c.OnStartup(func() error { config.WarnMetadata(dnsserver.GetConfig(c)); return nil })
	c.OnStartup(g.start)
	c.OnShutdown(g.stop)
	c.OnRestartFailed(g.ctl.Reclaim)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

// parse reads the block and loads what it names; it starts nothing.
func parse(c *caddy.Controller) (*GSLB, error) {
	o, err := config.ParseController(c)
	if err != nil {
		return nil, err
	}
	g := &GSLB{Zones: o.Zones, Fall: o.Fall, opts: o}
	if err := g.load(); err != nil {
		return nil, err
	}
	return g, nil
}

// load builds the control plane from the parsed options: it reads the node
// table and the databases, and starts nothing.
func (g *GSLB) load() error {
	if c := g.opts.DNSSEC; c != nil {
		ss, err := sign.Load(g.Zones, *c)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", g.opts.File, g.opts.Lines["dnssec"], err)
		}
		g.signers = ss
		if g.denial, err = c.Resolve(len(g.Fall.Zones) > 0); err != nil {
			return fmt.Errorf("%s:%d: %w", g.opts.File, g.opts.Lines["dnssec"], err)
		}
	}
	// New logs the start's warnings, as gslb check does.
	ctl, err := control.New(g.opts)
	if err != nil {
		return err
	}
	g.ctl, g.decider = ctl, ctl.Decider()
	g.warned = map[string]bool{}
	for _, w := range control.UnreachableNames(g.opts, ctl.Table()) {
		g.warned[w] = true
	}
	if err := g.buildChains(ctl.Table()); err != nil {
		return fmt.Errorf("%s:%d: %w", g.opts.File, g.opts.Lines["dnssec"], err)
	}
	ctl.OnTable = func(old, cur *table.Table) {
		if forgetNodes(old, cur) {
			g.metrics.reset()
		}
		g.warnUnreachable(cur)
		if err := g.buildChains(cur); err != nil {
			// Black lies until a table builds: still proofs, signed per name.
			g.chains.Store(nil)
			log.Errorf("Cannot build the DNSSEC denial chain of %s, denying with black lies: %v", g.opts.Nodes, err)
		}
	}
	g.rrl = rrl.New(g.rrlConfig())
	return nil
}

// rrlConfig is the rrl option with the trust_ecs resolvers exempt: the
// operator named them as resolvers, which ask for many clients.
func (g *GSLB) rrlConfig() rrl.Config {
	c := g.opts.RRL
	c.Exempt = append(append([]netip.Prefix(nil), c.Exempt...), g.opts.TrustECS...)
	return c
}
