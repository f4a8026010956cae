package gslb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

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
	_, err := e.record(e.g.ctl.view.Load(), name)
	return err
}

// record finds name's record, with an error that lists the known ones.
func (e *Engine) record(v *policy.View, name string) (*table.Record, error) {
	if name == "" {
		if len(v.Table.Names) == 0 {
			return nil, fmt.Errorf("node table %s has no records", v.Table.Path)
		}
		name = v.Table.Names[0]
	}
	fq := dns.Fqdn(strings.ToLower(name))
	if r := v.Table.Records[fq]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("unknown name %s: node table %s has %s", fq, v.Table.Path, strings.Join(v.Table.Names, ", "))
}

// Client is the address a decision is for: with Bits >= 0 it arrives as
// the ECS option ADDRESS/Bits, else as the resolver's own address. Remote
// is the resolver's address when it is known and differs (a dnstap query):
// the server falls back to it when the ECS prefix is too short.
type Client struct {
	Addr   netip.Addr
	Bits   int
	Mapped bool // the ECS option carried an IPv4-mapped IPv6 address: family 2
	Remote netip.Addr
}

// ParseClient reads ADDRESS or ADDRESS/PREFIX.
func ParseClient(s string) (Client, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Client{}, fmt.Errorf("client %q: %v", s, err)
		}
		if p.Addr().Zone() != "" {
			return Client{}, fmt.Errorf("client %q: a zone has no place in a prefix", s)
		}
		c := Client{Bits: p.Bits()}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return Client{}, fmt.Errorf("client %q: an IPv4-mapped prefix is /96 or longer", s)
			}
			c.Mapped, c.Bits = true, p.Bits()-96
		}
		q := netip.PrefixFrom(p.Addr().Unmap(), c.Bits).Masked()
		if !q.IsValid() {
			return Client{}, fmt.Errorf("client %q: not a prefix", s)
		}
		c.Addr = q.Addr()
		return c, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return Client{}, fmt.Errorf("client %q: not an address", s)
	}
	return Client{Addr: a.Unmap(), Bits: -1}, nil
}

func (c Client) String() string {
	switch {
	case c.Bits < 0:
		return c.Addr.String()
	case c.Mapped:
		return netip.PrefixFrom(netip.AddrFrom16(c.Addr.As16()), c.Bits+96).String()
	}
	return netip.PrefixFrom(c.Addr, c.Bits).String()
}

// assumedResolver is the tools' resolver when none is known: the client
// itself, trusted with its ECS whatever trust_ecs says.
type assumedResolver struct{ net.UDPAddr }

// query is the ECS option and the resolver address a query for c carries.
func (c Client) query() (*dns.EDNS0_SUBNET, net.Addr) {
	var remote net.Addr = &assumedResolver{net.UDPAddr{IP: c.Addr.AsSlice(), Port: 53}}
	if c.Remote.IsValid() {
		remote = &net.UDPAddr{IP: c.Remote.AsSlice(), Port: 53}
	}
	if c.Bits < 0 {
		return nil, remote
	}
	switch {
	case c.Mapped:
		a := c.Addr.As16()
		return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: uint8(c.Bits + 96),
			Address: net.IP(a[:])}, remote
	case c.Addr.Is6():
		return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: uint8(c.Bits),
			Address: net.IP(c.Addr.AsSlice())}, remote
	}
	return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(c.Bits),
		Address: net.IP(c.Addr.AsSlice())}, remote
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
func (e *Engine) Decide(ctx context.Context, c Client, name string, qtype uint16) (Outcome, error) {
	v := e.g.ctl.view.Load()
	rec, err := e.record(v, name)
	if err != nil {
		return Outcome{}, err
	}
	ecs, remote := c.query()
	var dc decision
	e.g.clientOf(remote, ecs, nil, &dc)
	dc.loc = e.g.ctl.locator.Locate(ctx, dc.client)
	e.g.choose(v, rec, qtype, &dc)
	return e.outcomeOf(&dc), nil
}

func (e *Engine) outcomeOf(dc *decision) Outcome {
	o := Outcome{Subnet: dc.loc.Key.Prefix(), DistanceKm: dc.d.DistanceKm, Policy: canary.PolicyStable}
	if dc.inCan {
		o.Policy = canary.PolicyCanary
	}
	w := dc.d.Winner
	if w == nil {
		o.DistanceKm = -1
		return o
	}
	o.Tier = dc.d.Tier.String()
	if dc.d.Tier == scoring.TierFailOpen && e.g.opts.AllDownServfail {
		o.DistanceKm = -1
		return o
	}
	{
		o.Node = w.ID
		if dc.loc.Province != "" {
			o.Located = true
			o.Same = dc.loc.Province == w.Province && dc.loc.Country == w.Country
		}
	}
	return o
}
