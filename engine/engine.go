// Package engine is the offline engine of the gslb tool: it parses a
// Corefile's gslb block, loads it as the server would, and decides,
// explains and replays queries through the server's decision path
// without serving DNS.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/sign"

	"github.com/miekg/dns"
)

// Config says which gslb block an Engine runs and what a tool
// changes in it.
type Config struct {
	Corefile string // its path
	Zone     string // the block's zone, needed when several blocks have gslb
	// Nodes, IPDB and Overrides replace the block's files when set.
	Nodes, IPDB, Overrides string
	Live                   bool // ask the block's Redis and online API
	Probe                  bool // probe every node once; else each is up with its table load
	// Feed, when set, is the cells to decide with (a saved GET /v1/feed).
	Feed *feed.Cells
}

// Engine decides the way the plugin does, through the same code, without
// serving DNS: the gslb tool explains and replays decisions with it.
type Engine struct {
	ctl *control.Control
	// Notes say where the engine's decisions may differ from the server's.
	Notes []string
}

// ErrNoBlock is returned for a Corefile without a gslb block.
var ErrNoBlock = errors.New("no gslb block")

// blocks parses the Corefile and returns the gslb blocks' options, each
// with nothing loaded yet.
func blocks(path string) ([]*config.Options, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dirs := dnsserver.Directives
	if !slices.Contains(dirs, config.Name) {
		dirs = append(slices.Clone(dirs), config.Name)
	}
	sbs, err := caddyfile.Parse(path, f, dirs)
	if err != nil {
		return nil, err
	}
	var gs []*config.Options
	// What must be unique across blocks, as the server's instance storage
	// holds it.
	seen := config.Unique{}
	for _, sb := range sbs {
		toks := sb.Tokens[config.Name]
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
			return nil, plugin.Error(config.Name, err)
		}
		gs = append(gs, o)
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNoBlock)
	}
	return gs, nil
}

// pick is the block of zone, or the only block.
func pick(path, zone string, gs []*config.Options) (*config.Options, error) {
	if zone == "" {
		if len(gs) > 1 {
			var zs []string
			for _, o := range gs {
				zs = append(zs, strings.Join(o.Zones, " "))
			}
			return nil, fmt.Errorf("%s: %d gslb blocks (%s): say which with -zone", path, len(gs), strings.Join(zs, "; "))
		}
		return gs[0], nil
	}
	zone = dns.Fqdn(strings.ToLower(zone))
	for _, o := range gs {
		if slices.Contains(o.Zones, zone) {
			return o, nil
		}
	}
	return nil, fmt.Errorf("%s: no gslb block for zone %s", path, zone)
}

// Check loads the gslb blocks of a Corefile (the one of cfg.Zone when set)
// with their node tables and databases, the way a start or a reload does,
// and returns the error the server would, and warnings for what the server
// starts with but logs as an error (an admin state file that does not
// load).
func Check(cfg Config) (warnings []string, err error) {
	gs, err := blocks(cfg.Corefile)
	if err != nil {
		return nil, err
	}
	if cfg.Zone != "" {
		g, err := pick(cfg.Corefile, cfg.Zone, gs)
		if err != nil {
			return nil, err
		}
		gs = []*config.Options{g}
	}
	for _, o := range gs {
		cfg.apply(o)
		if o.DNSSEC != nil {
			// The key files, as the server loads them at setup.
			if _, err := sign.Load(o.Zones, *o.DNSSEC); err != nil {
				return nil, plugin.Error(config.Name, fmt.Errorf("%s:%d: %w", o.File, o.Lines["dnssec"], err))
			}
			if _, err := o.DNSSEC.Resolve(len(o.Fall.Zones) > 0); err != nil {
				return nil, plugin.Error(config.Name, fmt.Errorf("%s:%d: %w", o.File, o.Lines["dnssec"], err))
			}
		}
		ctl, err := control.New(o)
		if err != nil {
			return nil, plugin.Error(config.Name, err)
		}
		if err := ctl.StateError(); err != nil {
			warnings = append(warnings, fmt.Sprintf("%v: the server starts without it and refuses admin changes until it is fixed or removed", err))
		}
		ctl.Stop()
	}
	return warnings, nil
}

// apply puts the files the flags name in place of the block's. An error
// in one of them then names the file, not a Corefile line.
func (cfg *Config) apply(o *config.Options) {
	if cfg.Nodes != "" {
		o.Nodes = cfg.Nodes
		delete(o.Lines, "nodes")
	}
	if cfg.IPDB != "" {
		o.DB["ipdb"] = []string{cfg.IPDB}
		delete(o.Lines, "ipdb")
	}
	if cfg.Overrides != "" {
		o.Overrides = cfg.Overrides
		delete(o.Lines, "overrides")
	}
}

// New loads a Corefile's gslb block. Without cfg.Live it drops the
// block's Redis and online API, and says so in Notes.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	gs, err := blocks(cfg.Corefile)
	if err != nil {
		return nil, err
	}
	o, err := pick(cfg.Corefile, cfg.Zone, gs)
	if err != nil {
		return nil, err
	}
	cfg.apply(o)
	e := &Engine{}
	if !cfg.Live {
		if o.Redis != nil || o.Online != nil {
			e.Notes = append(e.Notes, "local sources only: the block's Redis and online API are not asked (-live asks them)")
		}
		o.Redis, o.Online = nil, nil
	}
	ctl, err := control.New(o)
	if err != nil {
		return nil, plugin.Error(config.Name, err)
	}
	e.ctl = ctl
	if ctl.Canary() != nil && !ctl.SaltKept() {
		e.Notes = append(e.Notes, "the canary's salt is not kept yet (no salt option, none in the state file): the canary's subnets shown are this run's draw, not the server's")
	}
	if cfg.Live {
		ctl.Locator().Start()
	}
	var snap *health.Snapshot
	probes := ctl.Probes()
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
	if cfg.Feed != nil {
		ctl.FixCells(cfg.Feed)
	}
	ctl.Fix(snap)
	return e, nil
}

// Close lets go of the databases and the layers.
func (e *Engine) Close() error { return e.ctl.Stop() }

// Records lists the node table's names in its order.
func (e *Engine) Records() []string { return e.ctl.View().Table.Names }

// NodesFile is the node table the engine decides with.
func (e *Engine) NodesFile() string { return e.ctl.Options().Nodes }

// CheckName returns an error naming the known records when name is not
// one of them.
func (e *Engine) CheckName(name string) error {
	_, err := decide.Record(e.ctl.View(), name)
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
	// Scope is the reply's ECS scope, for a query without ECS the scope of
	// a reply to one of the client's /24 (/48): the network an ECS-caching
	// resolver keeps the answer for.
	Scope  uint8
	Client netip.Addr
	// Province and ISP are where the client was placed.
	Province, ISP string
	// Answer tells answers apart for an ECS-caching resolver's entries:
	// the node, or for HTTPS the A and the AAAA decision's nodes (the
	// cname for an AliasMode record).
	Answer string
}

// Decide decides one query the way the server does; name "" is the first
// record. An HTTPS query counts as its A decision (its AAAA one when the
// A decision has no node), with the reply's scope, and as NODATA for a
// record without https.
func (e *Engine) Decide(ctx context.Context, c decide.Client, name string, qtype uint16) (Outcome, error) {
	if qtype == dns.TypeHTTPS {
		return e.decideHTTPS(ctx, c, name)
	}
	var out decide.Outcome
	if err := e.ctl.Decider().For(ctx, c, name, qtype, &out); err != nil {
		return Outcome{}, err
	}
	o := outcomeOf(&out)
	o.Answer = o.Node
	return o, nil
}

func (e *Engine) decideHTTPS(ctx context.Context, c decide.Client, name string) (Outcome, error) {
	var out4, out6 decide.Outcome
	rec, err := e.ctl.Decider().ForHTTPS(ctx, c, name, &out4, &out6)
	if err != nil {
		return Outcome{}, err
	}
	if rec.HTTPS == nil {
		// NODATA, undecided, with scope 0.
		return Outcome{Subnet: out4.Loc.Key.Prefix(), DistanceKm: -1, Policy: out4.Policy(), Client: out4.Client}, nil
	}
	o := outcomeOf(decide.Counted(&out4, &out6))
	if out4.FromECS {
		o.Scope = decide.HTTPSScope(&out4, &out6)
	} else {
		o.Scope = max(out4.KeyScope, out6.KeyScope)
	}
	if rr := decide.HTTPS(rec.Name, rec, &out4, &out6); rr != nil && rr.Priority == 0 {
		o.Answer = rr.Target
	} else if rr != nil {
		o.Answer = winnerID(&out4) + " " + winnerID(&out6)
	}
	return o, nil
}

// winnerID is the node whose addresses a family's hints hold: "-" for a
// family that gets none.
func winnerID(o *decide.Outcome) string {
	if w := o.Decision.Winner; w != nil && o.Own() {
		return w.ID
	}
	return "-"
}

func outcomeOf(out *decide.Outcome) Outcome {
	d := &out.Decision
	o := Outcome{Subnet: out.Loc.Key.Prefix(), DistanceKm: d.DistanceKm, Policy: out.Policy(), Scope: out.KeyScope, Client: out.Client,
		Province: out.Loc.Province, ISP: out.Loc.ISP}
	if out.FromECS {
		o.Scope = out.Scope
	}
	if d.Winner == nil {
		o.DistanceKm = -1
		return o
	}
	o.Tier = d.Tier.String()
	if out.Servfail {
		o.DistanceKm = -1
		return o
	}
	if d.Tier == scoring.TierFallback {
		o.DistanceKm = -1
		return o // no node's answer
	}
	o.Node, o.Located, o.Same = d.Winner.ID, out.Located, out.Same
	return o
}

// Explain decides one query like Decide and says why.
func (e *Engine) Explain(ctx context.Context, c decide.Client, name string, qtype uint16) (*decide.Explanation, error) {
	return e.ctl.Decider().Explain(ctx, c, name, qtype, e.Notes)
}

// Validate is the gslb directive's setup for a tool that validates a
// whole Corefile with the server's plugins: it parses and loads the block
// as the server's setup does, and keeps nothing.
func Validate(c *caddy.Controller) error {
	o, err := config.ParseController(c)
	if err == nil {
		var ctl *control.Control
		if ctl, err = control.New(o); err == nil {
			return ctl.Stop()
		}
	}
	return plugin.Error(config.Name, err)
}

// Place is where the block's locator puts a (a resolver, say): its
// province and carrier.
func (e *Engine) Place(ctx context.Context, a netip.Addr) (province, isp string) {
	r := e.ctl.Locator().Locate(ctx, a)
	return r.Province, r.ISP
}
