// Package gslb is a CoreDNS plugin that answers A/AAAA for its records with
// the node that best fits the client's location and carrier, among the nodes
// that are healthy and not overloaded.
package gslb

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/request"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

var log = clog.NewWithPlugin(pluginName)

// GSLB is the plugin handler.
type GSLB struct {
	Next  plugin.Handler
	Zones []string
	Fall  fall.F

	opts options
	rt   *runtime
}

// Name implements plugin.Handler.
func (g *GSLB) Name() string { return pluginName }

// decision is what one query saw and chose; it feeds the answer, the
// metrics and, when the metadata plugin is on, the log.
type decision struct {
	client     netip.Addr
	fromECS    bool
	ecs        *dns.EDNS0_SUBNET
	loc        geo.Location
	d          scoring.Decision
	node       *node
	nodeState  string
	scope      uint8
	familyBits uint8
}

// ServeDNS implements plugin.Handler.
func (g *GSLB) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	qname := state.Name()
	zone := plugin.Zones(g.Zones).Matches(qname)
	if zone == "" {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	if r.Opcode != dns.OpcodeQuery {
		// NOTIFY, UPDATE and the rest: the answers are computed, not stored.
		return dns.RcodeNotImplemented, nil
	}
	v := g.rt.view.Load()
	rec := v.t.records[qname]
	if rec == nil && g.Fall.Through(qname) {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	qtype := state.QType()
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		return dns.RcodeRefused, nil
	}
	server := metrics.WithServer(ctx)

	ecs, err := parseECS(r)
	if err != nil {
		ecsTotal.WithLabelValues(server, "invalid").Inc()
		log.Debugf("FORMERR for %s from %s: %v", qname, state.IP(), err)
		return dns.RcodeFormatError, nil
	}

	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true

	apex := qname == zone
	switch {
	case apex && qtype == dns.TypeSOA:
		m.Answer = []dns.RR{g.soa(v, zone)}
		return g.write(w, m, r, ecs, 0)
	case apex && qtype == dns.TypeNS && len(v.t.nameservers) > 0:
		m.Answer = g.ns(v, zone)
		return g.write(w, m, r, ecs, 0)
	case rec == nil && !apex && !v.t.ents[qname]:
		m.Rcode = dns.RcodeNameError
		return g.negative(w, m, r, v, zone, ecs, 0)
	case rec == nil || qtype != dns.TypeA && qtype != dns.TypeAAAA:
		return g.negative(w, m, r, v, zone, ecs, 0)
	}

	start := time.Now()
	var dc decision
	g.decide(ctx, v, rec, qtype, w.RemoteAddr(), ecs, server, &dc)
	decisionDuration.WithLabelValues(server).Observe(time.Since(start).Seconds())
	setMetadata(ctx, &dc)

	if dc.node == nil {
		// No node of the record has an address of this family.
		return g.negative(w, m, r, v, zone, ecs, dc.scope)
	}
	decisions.WithLabelValues(server, dc.d.Tier.String()).Inc()
	if dc.d.Tier == scoring.TierFailOpen && g.opts.allDownServfail {
		return dns.RcodeServerFailure, nil
	}
	nodeAnswers.WithLabelValues(server, dc.node.ID).Inc()
	if dc.loc.Province != "" {
		if dc.loc.Province == dc.node.Province && dc.loc.Country == dc.node.Country {
			provinceMatch.WithLabelValues(server, "same").Inc()
		} else {
			provinceMatch.WithLabelValues(server, "cross").Inc()
		}
	}

	hdr := dns.RR_Header{Name: state.QName(), Class: dns.ClassINET, Ttl: rec.ttl}
	if qtype == dns.TypeA {
		hdr.Rrtype = dns.TypeA
		for _, a := range dc.node.v4 {
			ip := a.As4()
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IP(ip[:])})
		}
	} else {
		hdr.Rrtype = dns.TypeAAAA
		for _, a := range dc.node.v6 {
			ip := a.As16()
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip[:])})
		}
	}
	return g.write(w, m, r, ecs, dc.scope)
}

// negative answers NXDOMAIN or NODATA (as m.Rcode says) with the zone's SOA.
func (g *GSLB) negative(w dns.ResponseWriter, m, r *dns.Msg, v *view, zone string, ecs *dns.EDNS0_SUBNET, scope uint8) (int, error) {
	m.Ns = []dns.RR{g.soa(v, zone)}
	return g.write(w, m, r, ecs, scope)
}

func (g *GSLB) write(w dns.ResponseWriter, m, r *dns.Msg, ecs *dns.EDNS0_SUBNET, scope uint8) (int, error) {
	addECS(m, r, ecs, scope)
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// decide fills dc: client address, location, ladder decision and ECS scope.
func (g *GSLB) decide(ctx context.Context, v *view, rec *record, qtype uint16, remote net.Addr, ecs *dns.EDNS0_SUBNET, server string, dc *decision) {
	dc.ecs = ecs
	if a, ok := ecsClient(ecs, g.opts.ecsMin4, g.opts.ecsMin6); ok {
		dc.client, dc.fromECS = a, true
		ecsTotal.WithLabelValues(server, "used").Inc()
	} else {
		dc.client = remoteAddr(remote)
		if ecs != nil {
			ecsTotal.WithLabelValues(server, "ignored").Inc()
		} else {
			ecsTotal.WithLabelValues(server, "absent").Inc()
		}
	}
	dc.familyBits = 24
	if !dc.client.Unmap().Is4() {
		dc.familyBits = 48
	}

	dc.loc = g.rt.locator.Locate(ctx, dc.client)
	var c scoring.Client
	if !dc.loc.Special {
		c = scoring.Client{
			Country:   dc.loc.Country,
			Continent: dc.loc.Continent,
			Province:  dc.loc.Province,
			ISP:       dc.loc.ISP,
			HasCoords: dc.loc.HasCoords,
			Lat:       dc.loc.Lat,
			Lon:       dc.loc.Lon,
		}
	}
	cand := rec.v4
	if qtype == dns.TypeAAAA {
		cand = rec.v6
	}
	dc.d = scoring.Choose(&c, v.nodes, cand, v.t.topo, &g.opts.params, tieKey(dc.client.Unmap()))
	if dc.d.Node >= 0 {
		dc.node = &v.t.nodes[dc.d.Node]
		dc.nodeState = v.states[dc.d.Node]
	}

	// The scope is the shortest prefix over which this answer holds: the
	// database network, widened to the cache granularity when a finer layer
	// may refine it or a per-subnet tie picked the node.
	if dc.fromECS {
		scope := dc.loc.Bits
		if dc.d.Tied || (!dc.loc.Special && dc.loc.Province == "" && g.rt.refines) {
			scope = max(scope, dc.familyBits)
		}
		if ecs.Family == 2 && dc.client.Unmap().Is4() {
			// An IPv4-mapped client was located as IPv4; the scope is in
			// the option's family.
			scope += 96
		}
		dc.scope = min(scope, ecs.SourceNetmask)
	}
}

// tieKey identifies the client's /24 (IPv4) or /48 (IPv6).
func tieKey(a netip.Addr) uint64 {
	if a.Is4() {
		b := a.As4()
		return uint64(binary.BigEndian.Uint32(b[:])&0xffffff00) | 4<<32
	}
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8])&^0xffff | 6
}

// ns lists the node table's name servers for the zone apex.
func (g *GSLB) ns(v *view, zone string) []dns.RR {
	rrs := make([]dns.RR, len(v.t.nameservers))
	for i, n := range v.t.nameservers {
		rrs[i] = &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: g.opts.ttl}, Ns: n}
	}
	return rrs
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

func (g *GSLB) mname(v *view, zone string) string {
	if len(v.t.nameservers) > 0 {
		return v.t.nameservers[0]
	}
	return dnsutil.Join("ns1", "dns", zone)
}

// soa is synthesized the way k8s_external does; the serial follows the node table.
func (g *GSLB) soa(v *view, zone string) *dns.SOA {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: g.opts.ttl},
		Ns:      g.mname(v, zone),
		Mbox:    dnsutil.Join("hostmaster", "dns", zone),
		Serial:  v.serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  g.opts.ttl,
	}
}
