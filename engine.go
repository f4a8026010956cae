package gslb

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/health"

	"github.com/miekg/dns"
)

// EngineConfig says which gslb block an Engine runs and what a tool
// changes in it.
type EngineConfig struct {
	Corefile string // its path
	Zone     string // the block's zone, needed when several blocks have gslb
	// Nodes, IPDB and Overrides replace the block's files when set.
	Nodes, IPDB, Overrides string
	Live                   bool // ask the block's Redis and online API
	Probe                  bool // probe every node once; else each is up with its table load
}

// Engine decides the way the plugin does, through the same code, without
// serving DNS: the gslb tool explains and replays decisions with it.
type Engine struct {
	g *GSLB
	// Notes say where the engine's decisions may differ from the server's.
	Notes []string
}

// ErrNoBlock is returned for a Corefile without a gslb block.
var ErrNoBlock = errors.New("no gslb block")

// blocks parses the Corefile and returns the gslb blocks' options, each
// with nothing loaded yet.
func blocks(path string) ([]*GSLB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dirs := dnsserver.Directives
	if !slices.Contains(dirs, pluginName) {
		dirs = append(slices.Clone(dirs), pluginName)
	}
	sbs, err := caddyfile.Parse(path, f, dirs)
	if err != nil {
		return nil, err
	}
	var gs []*GSLB
	// What must be unique across blocks, as the server's instance storage
	// holds it.
	seen := config.Unique{}
	for _, sb := range sbs {
		toks := sb.Tokens[pluginName]
		if len(toks) == 0 {
			continue
		}
		// As the root plugin does: the last root line wins.
		root := ""
		if rt := sb.Tokens["root"]; len(rt) > 1 {
			for j := len(rt) - 2; j >= 0; j-- {
				if rt[j].Text == "root" {
					root = rt[j+1].Text
					break
				}
			}
		}
		d := caddyfile.NewDispenserTokens(path, toks)
		o, err := config.Parse(&d, sb.Keys, root, seen)
		if err != nil {
			return nil, plugin.Error(pluginName, err)
		}
		gs = append(gs, &GSLB{Zones: o.Zones, Fall: o.Fall, opts: o})
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNoBlock)
	}
	return gs, nil
}

// pick is the block of zone, or the only block.
func pick(path, zone string, gs []*GSLB) (*GSLB, error) {
	if zone == "" {
		if len(gs) > 1 {
			var zs []string
			for _, g := range gs {
				zs = append(zs, strings.Join(g.Zones, " "))
			}
			return nil, fmt.Errorf("%s: %d gslb blocks (%s): say which with -zone", path, len(gs), strings.Join(zs, "; "))
		}
		return gs[0], nil
	}
	zone = dns.Fqdn(strings.ToLower(zone))
	for _, g := range gs {
		if slices.Contains(g.Zones, zone) {
			return g, nil
		}
	}
	return nil, fmt.Errorf("%s: no gslb block for zone %s", path, zone)
}

// Check loads the gslb blocks of a Corefile (the one of cfg.Zone when set)
// with their node tables and databases, the way a start or a reload does,
// and returns the error the server would.
func Check(cfg EngineConfig) error {
	gs, err := blocks(cfg.Corefile)
	if err != nil {
		return err
	}
	if cfg.Zone != "" {
		g, err := pick(cfg.Corefile, cfg.Zone, gs)
		if err != nil {
			return err
		}
		gs = []*GSLB{g}
	}
	for _, g := range gs {
		cfg.apply(g.opts)
		if err := g.load(); err != nil {
			return plugin.Error(pluginName, err)
		}
		g.stop()
	}
	return nil
}

func (cfg *EngineConfig) apply(o *config.Options) {
	if cfg.Nodes != "" {
		o.Nodes = cfg.Nodes
	}
	if cfg.IPDB != "" {
		o.IPDB = cfg.IPDB
	}
	if cfg.Overrides != "" {
		o.Overrides = cfg.Overrides
	}
}

// NewEngine loads a Corefile's gslb block. Without cfg.Live it drops the
// block's Redis and online API, and says so in Notes.
func NewEngine(ctx context.Context, cfg EngineConfig) (*Engine, error) {
	gs, err := blocks(cfg.Corefile)
	if err != nil {
		return nil, err
	}
	g, err := pick(cfg.Corefile, cfg.Zone, gs)
	if err != nil {
		return nil, err
	}
	cfg.apply(g.opts)
	e := &Engine{g: g}
	if !cfg.Live {
		if g.opts.Redis != nil || g.opts.Online != nil {
			e.Notes = append(e.Notes, "local sources only: the block's Redis and online API are not asked (-live asks them)")
		}
		g.opts.Redis, g.opts.Online = nil, nil
	}
	if err := g.load(); err != nil {
		return nil, plugin.Error(pluginName, err)
	}
	ctl := g.ctl
	if ctl.canary.Load() != nil && !ctl.salt.Kept() {
		e.Notes = append(e.Notes, "the canary's salt is not kept yet (no salt option, none in the state file): the canary's subnets shown are this run's draw, not the server's")
	}
	if cfg.Live {
		ctl.locator.Start()
	}
	var snap *health.Snapshot
	probes := ctl.table.Probes
	if cn := ctl.canary.Load(); cn != nil {
		probes = append(slices.Clone(probes), cn.Table.Probes...)
	}
	if cfg.Probe {
		snap = health.ProbeOnce(ctx, probes, health.Options{})
	} else {
		m := make(map[string]health.Status, len(probes))
		for _, t := range probes {
			m[t.ID] = health.Status{State: health.StateUp}
		}
		snap = health.NewSnapshot(m)
		if len(m) > 0 {
			e.Notes = append(e.Notes, "probes not run: every node is up with its table load (-probe runs them once)")
		}
	}
	ctl.mu.Lock()
	ctl.fixed = snap
	ctl.publish()
	ctl.mu.Unlock()
	return e, nil
}

// Close lets go of the databases and the layers.
func (e *Engine) Close() error { return e.g.stop() }

// Records lists the node table's names in its order.
func (e *Engine) Records() []string { return e.g.ctl.view.Load().Table.Names }

// NodesFile is the node table the engine decides with.
func (e *Engine) NodesFile() string { return e.g.opts.Nodes }

// CheckName returns an error naming the known records when name is not
// one of them.
func (e *Engine) CheckName(name string) error {
	_, err := decide.Record(e.g.ctl.View(), name)
	return err
}

// Outcome is what one query decided, for a replay, counted the way the
// server's metrics count it.
type Outcome struct {
	Subnet     netip.Prefix // the client's /24 (/48)
	Tier       string       // "" for NODATA: no node has an address of the type
	Node       string       // the node answered with; "" for NODATA and SERVFAIL
	Located    bool         // answered, and the client's province is known: it counts for the cross-province ratio
	Same       bool         // and the node is in it
	DistanceKm float64
	Policy     string // stable, or canary
}

// Decide decides one query the way the server does; name "" is the first
// record.
func (e *Engine) Decide(ctx context.Context, c decide.Client, name string, qtype uint16) (Outcome, error) {
	var out decide.Outcome
	if err := e.g.decider.For(ctx, c, name, qtype, &out); err != nil {
		return Outcome{}, err
	}
	return outcomeOf(&out), nil
}

func outcomeOf(out *decide.Outcome) Outcome {
	d := &out.Decision
	o := Outcome{Subnet: out.Loc.Key.Prefix(), DistanceKm: d.DistanceKm, Policy: out.Policy()}
	if d.Winner == nil {
		o.DistanceKm = -1
		return o
	}
	o.Tier = d.Tier.String()
	if out.Servfail {
		o.DistanceKm = -1
		return o
	}
	o.Node, o.Located, o.Same = d.Winner.ID, out.Located, out.Same
	return o
}

// Explain decides one query like Decide and says why.
func (e *Engine) Explain(ctx context.Context, c decide.Client, name string, qtype uint16) (*decide.Explanation, error) {
	return e.g.decider.Explain(ctx, c, name, qtype, e.Notes)
}
