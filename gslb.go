// Package gslb is a CoreDNS plugin that answers A/AAAA for its records with
// the node that best fits the client's location and carrier, among the nodes
// that are healthy and not overloaded.
package gslb

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

var log = clog.NewWithPlugin(pluginName)

// GSLB is the plugin handler.
type GSLB struct {
	Next  plugin.Handler
	Zones []string
	Fall  fall.F

	opts *config.Options
	ctl  *control

	// The next plugin's apex SOA by zone, when it is authoritative for
	// the zone we fall through to; see followNext.
	nextSOA atomic.Pointer[map[string]*dns.SOA]
	soaOnce sync.Once
}

// Name implements plugin.Handler.
func (g *GSLB) Name() string { return pluginName }

func (g *GSLB) start() error {
	if err := g.ctl.start(); err != nil {
		return err
	}
	g.soaOnce.Do(func() { g.followNext(g.ctl.stopCh, g.opts.Reload) })
	return nil
}
func (g *GSLB) stop() error { return g.ctl.stop() }

// decision is what one query saw and chose; it feeds the answer, the
// metrics and, when the metadata plugin is on, the log.
type decision struct {
	client  netip.Addr
	fromECS bool
	ecs     *dns.EDNS0_SUBNET
	loc     locate.Result
	d       policy.Decision
	scope   uint8
	// The policy decided under: the view and record of the stable table,
	// or of the candidate table for a subnet in the canary.
	v      *policy.View
	rec    *table.Record
	canary *canary.Rollout // the rollout the subnet was checked against; nil: none
	inCan  bool
}

// ServeDNS implements plugin.Handler.
func (g *GSLB) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	// The server drops queries without a question. The name is used as the
	// wire gave it, already in presentation form: the answer echoes its case.
	asked := r.Question[0].Name
	qname := strings.ToLower(asked)
	zone := zoneOf(g.Zones, qname)
	if zone == "" {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	if r.Opcode != dns.OpcodeQuery {
		// NOTIFY, UPDATE and the rest: the answers are computed, not stored.
		return dns.RcodeNotImplemented, nil
	}
	v := g.ctl.view.Load()
	rec := v.Table.Records[qname]
	if rec == nil && g.Fall.Through(qname) {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	qtype := r.Question[0].Qtype
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		return dns.RcodeRefused, nil
	}
	mx := g.ctl.metrics.of(metrics.WithServer(ctx))

	ecs, err := parseECS(r)
	if err != nil {
		mx.invalid.Inc()
		log.Debugf("FORMERR for %s from %s: %v", qname, remoteAddr(w.RemoteAddr()), err)
		return dns.RcodeFormatError, nil
	}

	a := answer{g: g, w: w, r: r, v: v, zone: zone, ecs: ecs}
	apex := qname == zone
	switch {
	case apex && qtype == dns.TypeSOA:
		return a.write(0, g.soa(v, zone))
	case apex && qtype == dns.TypeNS && len(v.Table.Nameservers) > 0:
		return a.write(0, g.ns(v, zone)...)
	case rec == nil && !apex && !v.Table.ENTs[qname]:
		return a.negative(dns.RcodeNameError, 0)
	case rec == nil || qtype != dns.TypeA && qtype != dns.TypeAAAA:
		return a.negative(dns.RcodeSuccess, 0)
	}

	start := time.Now()
	var dc decision
	g.decide(ctx, v, rec, qtype, w.RemoteAddr(), ecs, mx, &dc)
	mx.duration.Observe(time.Since(start).Seconds())
	setMetadata(ctx, &dc)

	if dc.d.Winner == nil {
		// No node of the record has an address of this family.
		return a.negative(dns.RcodeSuccess, dc.scope)
	}
	mx.tiers[dc.d.Tier].Inc()
	if dc.d.Tier == scoring.TierFailOpen && g.opts.AllDownServfail {
		return dns.RcodeServerFailure, nil
	}
	mx.node(dc.d.Winner.ID).Inc()
	located := dc.loc.Province != ""
	same := located && dc.loc.Province == dc.d.Winner.Province && dc.loc.Country == dc.d.Winner.Country
	if located {
		if same {
			mx.same.Inc()
		} else {
			mx.cross.Inc()
		}
	}
	if dc.canary != nil {
		// The policy series only count while a canary is configured.
		pm := &policyMetrics[0]
		if dc.inCan {
			pm = &policyMetrics[1]
		}
		pm.tiers[dc.d.Tier].Inc()
		if located {
			if same {
				pm.same.Inc()
			} else {
				pm.cross.Inc()
			}
		}
		dc.canary.Count(dc.inCan, located, same, dc.loc.Key, start)
	}
	return a.addresses(asked, qtype, dc.rec.TTL, dc.v, &dc.d, dc.scope)
}

// decide fills dc: client address, location, decision and ECS scope.
func (g *GSLB) decide(ctx context.Context, v *policy.View, rec *table.Record, qtype uint16, remote net.Addr, ecs *dns.EDNS0_SUBNET, mx *serverMetrics, dc *decision) {
	g.clientOf(remote, ecs, mx, dc)
	dc.loc = g.ctl.locator.Locate(ctx, dc.client)
	g.choose(v, rec, qtype, dc)
}

// clientOf sets the address the decision is for: the ECS address when it
// is specific enough and the resolver is trusted with it, else the
// resolver's. mx is nil for the tools.
func (g *GSLB) clientOf(remote net.Addr, ecs *dns.EDNS0_SUBNET, mx *serverMetrics, dc *decision) {
	dc.ecs = ecs
	if a, ok := ecsClient(ecs, g.opts.ECSMin4, g.opts.ECSMin6); ok && g.trustsECS(remote) {
		dc.client, dc.fromECS = a, true
		if mx != nil {
			mx.used.Inc()
		}
		return
	}
	dc.client = remoteAddr(remote)
	switch {
	case mx == nil:
	case ecs != nil:
		mx.ignored.Inc()
	default:
		mx.absent.Inc()
	}
}

// choose decides for dc's location, under the canary's table when its
// subnet is in the canary, and sets the reply's scope.
func (g *GSLB) choose(v *policy.View, rec *table.Record, qtype uint16, dc *decision) {
	dc.v, dc.rec, dc.inCan = v, rec, false
	if cn := g.ctl.canary.Load(); cn != nil {
		dc.canary = cn
		if cn.Picks(dc.loc.Key) {
			if cv := cn.View.Load(); cv != nil {
				if crec := cv.Table.Records[rec.Name]; crec != nil {
					dc.v, dc.rec, dc.inCan = cv, crec, true
				}
			}
		}
	}
	dc.d = dc.v.Decide(dc.query(dc.rec, qtype))
	if dc.fromECS {
		// With a canary, the subnet chose the policy: an answer must not
		// be cached for subnets of the other one.
		perSubnet := dc.d.PerSubnet || dc.canary != nil && dc.canary.Active()
		dc.scope = replyScope(dc.ecs, dc.loc, perSubnet)
	}
}

func (dc *decision) query(rec *table.Record, qtype uint16) *policy.Query {
	return &policy.Query{Record: rec, QType: qtype, Client: policy.ClientOf(&dc.loc.Location),
		Subnet: uint64(dc.loc.Key), Pin: dc.loc.Override.Pin}
}

// replyScope is the shortest prefix over which the answer holds: what the
// location vouches for, widened to the client's /24 (/48) when that picked
// the node, in the option's family and never beyond its source prefix.
func replyScope(ecs *dns.EDNS0_SUBNET, loc locate.Result, perSubnet bool) uint8 {
	scope := loc.Scope
	if perSubnet {
		scope = max(scope, loc.Key.Bits())
	}
	if ecs.Family == 2 && loc.Key.Is4() {
		// An IPv4-mapped client was located as IPv4.
		scope += 96
	}
	return min(scope, ecs.SourceNetmask)
}

// trustsECS reports whether the resolver at remote may speak for its
// clients: any resolver without trust_ecs.
func (g *GSLB) trustsECS(remote net.Addr) bool {
	if len(g.opts.TrustECS) == 0 {
		return true
	}
	if _, tool := remote.(*assumedResolver); tool {
		return true
	}
	a := remoteAddr(remote)
	for _, p := range g.opts.TrustECS {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func remoteAddr(a net.Addr) netip.Addr {
	var ip net.IP
	switch t := a.(type) {
	case *net.UDPAddr:
		ip = t.IP
	case *net.TCPAddr:
		ip = t.IP
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap()
		}
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// zoneOf is plugin.Zones.Matches without its allocations: the longest zone
// qname is in. Both are lower case and fully qualified.
func zoneOf(zones []string, qname string) string {
	z := ""
	for _, zone := range zones {
		if len(zone) > len(z) && inZone(qname, zone) {
			z = zone
		}
	}
	return z
}

func inZone(name, zone string) bool {
	if zone == "." {
		return true
	}
	if !strings.HasSuffix(name, zone) {
		return false
	}
	rest := name[:len(name)-len(zone)]
	if rest == "" {
		return true
	}
	if rest[len(rest)-1] != '.' {
		return false
	}
	// An odd run of backslashes escapes the dot: it is not a label boundary.
	n := 0
	for i := len(rest) - 2; i >= 0 && rest[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}
