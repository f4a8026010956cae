package gslb

import (
	"net"

	"github.com/coredns/coredns/plugin/pkg/dnsutil"

	"github.com/gslbdns/gslb/policy"

	"github.com/miekg/dns"
)

// answer writes one reply: authoritative, with the query's ECS option and
// its scope.
type answer struct {
	g    *GSLB
	w    dns.ResponseWriter
	r    *dns.Msg
	v    *policy.View
	zone string
	ecs  *dns.EDNS0_SUBNET
}

// write answers with rrs.
func (a *answer) write(scope uint8, rrs ...dns.RR) (int, error) {
	m := new(dns.Msg)
	m.SetReply(a.r)
	m.Authoritative = true
	m.Answer = rrs
	addECS(m, a.r, a.ecs, scope)
	a.w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// negative answers NXDOMAIN or NODATA with the zone's SOA.
func (a *answer) negative(rcode int, scope uint8) (int, error) {
	m := new(dns.Msg)
	m.SetReply(a.r)
	m.Authoritative = true
	m.Rcode = rcode
	m.Ns = []dns.RR{a.g.soa(a.v, a.zone)}
	addECS(m, a.r, a.ecs, scope)
	a.w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// addresses are the A or AAAA records of the decision's nodes, the winner
// first, fresh for this reply.
func addresses(name string, qtype uint16, ttl uint32, v *policy.View, d *policy.Decision) []dns.RR {
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl}
	var rrs []dns.RR
	for _, i := range d.Order[:d.NOrder] {
		n := &v.Table.Nodes[i]
		if qtype == dns.TypeA {
			for _, a := range n.V4 {
				ip := a.As4()
				rrs = append(rrs, &dns.A{Hdr: hdr, A: net.IP(ip[:])})
			}
			continue
		}
		for _, a := range n.V6 {
			ip := a.As16()
			rrs = append(rrs, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip[:])})
		}
	}
	return rrs
}

// ns lists the node table's name servers for the zone apex.
func (g *GSLB) ns(v *policy.View, zone string) []dns.RR {
	rrs := make([]dns.RR, len(v.Table.Nameservers))
	for i, n := range v.Table.Nameservers {
		rrs[i] = &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: g.opts.ttl}, Ns: n}
	}
	return rrs
}

// soa is synthesized the way k8s_external does; the serial follows the
// node table, the MNAME is the first name server when the table lists any.
func (g *GSLB) soa(v *policy.View, zone string) *dns.SOA {
	mname := dnsutil.Join("ns1", "dns", zone)
	if len(v.Table.Nameservers) > 0 {
		mname = v.Table.Nameservers[0]
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: g.opts.ttl},
		Ns:      mname,
		Mbox:    dnsutil.Join("hostmaster", "dns", zone),
		Serial:  v.Serial,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  g.opts.ttl,
	}
}
