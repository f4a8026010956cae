package gslb

import (
	"net"

	"github.com/coredns/coredns/plugin/metrics"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/sign"

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
	// signer signs the reply: set when the query has the DO bit and the
	// zone is signed.
	signer *sign.Signer
	server string
	// chain denies names when the zone is signed with NSEC or NSEC3;
	// nil with black lies, or unsigned.
	chain *sign.Chain
	qname string // lower case
	mx    *serverMetrics
	// rec is prometheus's recorder between us and the scrubbing
	// writer, found by plainConn; flush sets what it records.
	rec *metrics.Recorder
	// The reply, held for flush: a message, or bytes in a pooled buffer
	// with what the recorder is to count less than their length.
	msg  *dns.Msg
	held wire
	less int
	// build is wireAddresses' reply under construction.
	build wire
}

// reply is one answer's message with the parts it points to, so that a
// typical answer is a single allocation. It is never reused: plugins after
// us, like cache, may keep the message.
type reply struct {
	m     dns.Msg
	q     [1]dns.Question
	extra [1]dns.RR
	opt   dns.OPT
	opts  [1]dns.EDNS0
	sub   dns.EDNS0_SUBNET
	rrs   [2]dns.RR
	a     [2]dns.A
	ip4   [2][4]byte
}

// newReply is dns.Msg.SetReply in place, with the authoritative bit set.
func newReply(r *dns.Msg) *reply {
	p := new(reply)
	m := &p.m
	m.Id = r.Id
	m.Response = true
	m.Opcode = r.Opcode
	if m.Opcode == dns.OpcodeQuery {
		m.RecursionDesired = r.RecursionDesired
		m.CheckingDisabled = r.CheckingDisabled
	}
	if len(r.Question) > 0 {
		p.q[0] = r.Question[0]
		m.Question = p.q[:]
	}
	m.Authoritative = true
	return p
}

// write answers with rrs.
func (a *answer) write(scope uint8, rrs ...dns.RR) (int, error) {
	if a.limited(rrl.Answer, dns.RcodeSuccess, scope) {
		return dns.RcodeSuccess, nil
	}
	p := newReply(a.r)
	p.m.Answer = rrs
	return a.send(p, scope)
}

// nonAddress answers what is not an A/AAAA question for a record: the
// apex SOA and NS, NXDOMAIN for a name that does not exist, NODATA for the
// rest.
func (a *answer) nonAddress(qname string, record bool, qtype uint16) (int, error) {
	apex := qname == a.zone
	switch {
	case apex && qtype == dns.TypeSOA:
		return a.write(0, a.g.soa(a.v, a.zone))
	case apex && qtype == dns.TypeNS && len(a.v.Table.Nameservers) > 0:
		return a.write(0, a.g.ns(a.v, a.zone)...)
	case apex && qtype == dns.TypeDNSKEY && a.g.signers[a.zone] != nil:
		if a.limited(rrl.Answer, dns.RcodeSuccess, 0) {
			return dns.RcodeSuccess, nil
		}
		// Signed (already) only for a query with the DO bit.
		p := newReply(a.r)
		a.g.signers[a.zone].DNSKEY(&p.m, a.signer != nil, a.server)
		return a.sendSigned(p, 0, false)
	case apex && qtype == dns.TypeNSEC3PARAM && a.chain.NSEC3():
		if a.limited(rrl.Answer, dns.RcodeSuccess, 0) {
			return dns.RcodeSuccess, nil
		}
		p := newReply(a.r)
		a.chain.NSEC3PARAM(&p.m, a.signer != nil)
		return a.sendSigned(p, 0, false)
	case !record && !apex && !a.v.Table.ENTs[qname]:
		return a.negative(dns.RcodeNameError, 0)
	}
	return a.negative(dns.RcodeSuccess, 0)
}

// negative answers NXDOMAIN or NODATA with the zone's SOA.
func (a *answer) negative(rcode int, scope uint8) (int, error) {
	if a.limited(rrl.Denial, rcode, scope) {
		return dns.RcodeSuccess, nil
	}
	if a.signer != nil && a.wireDenial(scope) || a.wireNegative(rcode, scope) {
		return dns.RcodeSuccess, nil
	}
	p := newReply(a.r)
	p.m.Rcode = rcode
	p.rrs[0] = a.g.soa(a.v, a.zone)
	p.m.Ns = p.rrs[:1]
	return a.send(p, scope)
}

// addresses answers with the A or AAAA records of the decision's nodes,
// the winner first.
func (a *answer) addresses(name string, out *decide.Outcome) (int, error) {
	if a.limited(rrl.Answer, dns.RcodeSuccess, out.Scope) {
		return dns.RcodeSuccess, nil
	}
	if a.wireAddresses(out) {
		return dns.RcodeSuccess, nil
	}
	return a.msgAddresses(name, out)
}

// msgAddresses is addresses as a message, out of line: its frame would
// deepen the wire path's.
//
//go:noinline
func (a *answer) msgAddresses(name string, out *decide.Outcome) (int, error) {
	p := newReply(a.r)
	hdr := dns.RR_Header{Name: name, Rrtype: out.QType, Class: dns.ClassINET, Ttl: out.TTL}
	rrs := p.rrs[:0]
	for _, addr := range out.Addresses() {
		if out.QType == dns.TypeA {
			var rr *dns.A
			if k := len(rrs); k < len(p.a) {
				p.ip4[k] = addr.As4()
				rr = &p.a[k]
				*rr = dns.A{Hdr: hdr, A: p.ip4[k][:]}
			} else {
				ip := addr.As4()
				rr = &dns.A{Hdr: hdr, A: net.IP(ip[:])}
			}
			rrs = append(rrs, rr)
			continue
		}
		ip := addr.As16()
		rrs = append(rrs, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip[:])})
	}
	p.m.Answer = rrs
	return a.send(p, out.Scope)
}

// cname answers a cname node's name alone: the resolver follows it.
func (a *answer) cname(name, target string, out *decide.Outcome) (int, error) {
	if a.limited(rrl.Answer, dns.RcodeSuccess, out.Scope) {
		return dns.RcodeSuccess, nil
	}
	if a.wireCNAME(target, out) {
		return dns.RcodeSuccess, nil
	}
	p := newReply(a.r)
	p.rrs[0] = &dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: out.TTL}, Target: target}
	p.m.Answer = p.rrs[:1]
	return a.send(p, out.Scope)
}

// send adds the query's ECS option with its scope, signs the reply when the
// zone is signed and the query has the DO bit, and writes it. CoreDNS
// drops EDNS options it doesn't know unless the reply has its own OPT.
func (a *answer) send(p *reply, scope uint8) (int, error) {
	return a.sendSigned(p, scope, a.signer != nil)
}

// sendSigned is send, signing the reply when sign is set (a DNSKEY answer
// comes signed already). A signed NXDOMAIN goes out as a NODATA with an
// NSEC covering the query name alone.
func (a *answer) sendSigned(p *reply, scope uint8, sign bool) (int, error) {
	if a.ecs != nil {
		o := a.r.IsEdns0()
		p.opt.Hdr = dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}
		p.opt.SetUDPSize(o.UDPSize())
		if o.Do() {
			p.opt.SetDo()
		}
		p.sub = dns.EDNS0_SUBNET{
			Code:          dns.EDNS0SUBNET,
			Family:        a.ecs.Family,
			SourceNetmask: a.ecs.SourceNetmask,
			SourceScope:   scope,
			Address:       a.ecs.Address,
		}
		p.opts[0] = &p.sub
		p.opt.Option = p.opts[:]
		p.extra[0] = &p.opt
		p.m.Extra = p.extra[:]
	}
	if sign {
		a.sign(&p.m)
	}
	a.msg = &p.m
	return dns.RcodeSuccess, nil
}

// flush writes the reply the answer holds, if any. ServeDNS calls it, on
// its own frame: the writers below (the connection's parses control
// messages on every UDP write) then start from a shallower stack, which
// every plugin before us deepens; past a size, the runtime grows the
// query's goroutine by copying its stack.
//
//go:noinline
func (a *answer) flush() {
	if m := a.msg; m != nil {
		a.msg = nil
		a.mx.reply(a.zone, m.Rcode) // before the write: a scrape after the reply sees it
		a.w.WriteMsg(m)
		return
	}
	b := a.held.b
	if b == nil {
		return
	}
	a.mx.reply(a.zone, int(b[3]&0xf))
	rec, n := a.rec, 0
	if rec != nil {
		n = rec.Len
	}
	a.w.Write(b)
	if rec != nil {
		// What its WriteMsg would have recorded: the rcode and the
		// message's size (Write counts what the connection took: over
		// TCP, the length prefix too).
		rec.Rcode = int(b[3] & 0xf)
		rec.Len = n + len(b) - a.less
	}
	a.held.release()
	a.held = wire{}
}

// ns lists the node table's name servers for the zone apex.
func (g *GSLB) ns(v *policy.View, zone string) []dns.RR {
	rrs := make([]dns.RR, len(v.Table.Nameservers))
	for i, n := range v.Table.Nameservers {
		rrs[i] = &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: g.opts.TTL}, Ns: n}
	}
	return rrs
}

// sign signs m: a negative answer is proven by the zone's chain, else
// (black lies) by the signer with the rest.
func (a *answer) sign(m *dns.Msg) {
	neg := m.Rcode == dns.RcodeNameError || m.Rcode == dns.RcodeSuccess && len(m.Answer) == 0 &&
		len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA
	switch {
	case !neg:
		a.signer.Sign(m, a.server)
	case a.chain != nil:
		exists := a.chain.Deny(m, a.qname, a.r.Question[0].Qtype)
		a.mx.denied(a.g.denial, exists)
	default:
		exists := m.Rcode == dns.RcodeSuccess
		a.signer.Sign(m, a.server)
		a.mx.denied(sign.DenialBlackLies, exists)
	}
}
