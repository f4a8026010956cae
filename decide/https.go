package decide

import (
	"context"
	"net"

	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// ForHTTPS decides an HTTPS query for client c the way the server does:
// an A and an AAAA decision for the same client under the same view. It
// returns the record; an HTTPS query for a record without https gets
// NODATA, and out4 and out6 are then decided but not answered.
func (d *Decider) ForHTTPS(ctx context.Context, c Client, name string, out4, out6 *Outcome) (*table.Record, error) {
	v := d.src.View()
	rec, err := Record(v, name)
	if err != nil {
		return nil, err
	}
	ecs, remote := c.query()
	d.Decide(ctx, &Query{View: v, Record: rec, QType: dns.TypeA, Remote: remote, ECS: ecs}, out4)
	d.Decide(ctx, &Query{View: v, Record: rec, QType: dns.TypeAAAA, Remote: remote, ECS: ecs}, out6)
	return rec, nil
}

// HTTPS is the HTTPS record for the A and AAAA decisions out4 and out6
// of one query for rec. A browser that asks HTTPS first goes where it
// says, so it never moves a family away from its own decision: a
// ServiceMode record to "." with rec's SvcParams and, as hints, the
// addresses of each family whose decision is an own node; an AliasMode
// record to the cname winner's (or the fallback's) name only when no
// family's decision is an own node. nil when neither has a node.
func HTTPS(name string, rec *table.Record, out4, out6 *Outcome) *dns.HTTPS {
	ttl, scoped := uint32(0), false
	for _, o := range []*Outcome{out4, out6} {
		if o.Decision.Winner != nil && (!scoped || o.TTL < ttl) {
			ttl, scoped = o.TTL, true
		}
	}
	if !scoped {
		return nil
	}
	rr := &dns.HTTPS{SVCB: dns.SVCB{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeHTTPS, Class: dns.ClassINET, Ttl: ttl}}}
	if !out4.Own() && !out6.Own() {
		for _, o := range []*Outcome{out4, out6} {
			if c := o.CNAME(); c != "" {
				rr.Target = c // AliasMode: priority 0, no params
				return rr
			}
		}
		return nil
	}
	rr.Priority, rr.Target = 1, "."
	rr.Value = append(rr.Value, rec.HTTPS...)
	var v4, v6 []net.IP
	if out4.Own() {
		for _, a := range out4.Addresses() {
			ip := a.As4()
			v4 = append(v4, net.IP(ip[:]))
		}
	}
	if out6.Own() {
		for _, a := range out6.Addresses() {
			ip := a.As16()
			v6 = append(v6, net.IP(ip[:]))
		}
	}
	if len(v4) > 0 {
		rr.Value = append(rr.Value, &dns.SVCBIPv4Hint{Hint: v4})
	}
	if len(v6) > 0 {
		rr.Value = append(rr.Value, &dns.SVCBIPv6Hint{Hint: v6})
	}
	return rr
}

// Own reports whether the decision answers with an own node's addresses
// (not a cname node, the fallback, or SERVFAIL).
func (o *Outcome) Own() bool {
	return o.Decision.Winner != nil && !o.Servfail && o.CNAME() == ""
}

// HTTPSScope is the ECS scope of the reply to an HTTPS query: the longer
// of its decisions', so that a resolver keeps it for a network over which
// neither changes.
func HTTPSScope(out4, out6 *Outcome) uint8 { return max(out4.Scope, out6.Scope) }

// Counted is the decision an HTTPS query counts as (its tier, node and
// province match): the A one, or the AAAA one when the A decision has no
// node.
func Counted(out4, out6 *Outcome) *Outcome {
	if out4.Decision.Winner == nil && out6.Decision.Winner != nil {
		return out6
	}
	return out4
}
