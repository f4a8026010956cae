package gslb

import (
	"github.com/gslbdns/gslb/sign"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// chainSet is the denial chains of one node table, by zone.
type chainSet struct {
	t *table.Table
	z map[string]*sign.Chain
}

// buildChains builds and signs the chains of t's names, when the denial
// is a chain.
func (g *GSLB) buildChains(t *table.Table) error {
	if g.signers == nil || g.denial == sign.DenialBlackLies {
		return nil
	}
	cs := &chainSet{t: t, z: make(map[string]*sign.Chain, len(g.signers))}
	ttl := min(g.opts.TTL, g.opts.SOA.Minimum) // RFC 9077
	for zone, s := range g.signers {
		ch, err := sign.NewChain(s, *g.opts.DNSSEC, zoneNames(t, zone, g.Zones), ttl)
		if err != nil {
			return err
		}
		cs.z[zone] = ch
	}
	g.chains.Store(cs)
	return nil
}

// chainFor is zone's chain for the node table t; nil with black lies, or
// for a moment while a reload swaps a table in: black lies then.
func (g *GSLB) chainFor(t *table.Table, zone string) *sign.Chain {
	if cs := g.chains.Load(); cs != nil && cs.t == t {
		return cs.z[zone]
	}
	return nil
}

// zoneNames are the names gslb answers for in zone, with the types each
// holds: the apex (SOA, NS, DNSKEY), the records (A and AAAA as their
// nodes have addresses of the family, HTTPS with https params) and the
// empty non-terminals above them.
func zoneNames(t *table.Table, zone string, zones []string) []sign.Name {
	apex := []uint16{dns.TypeSOA, dns.TypeDNSKEY}
	if len(t.Nameservers) > 0 {
		apex = append(apex, dns.TypeNS)
	}
	names := []sign.Name{}
	for name, r := range t.Records {
		if zoneOf(zones, name) != zone {
			continue
		}
		var types []uint16
		if len(r.V4) > 0 {
			types = append(types, dns.TypeA)
		}
		if len(r.V6) > 0 {
			types = append(types, dns.TypeAAAA)
		}
		if r.HTTPS != nil {
			types = append(types, dns.TypeHTTPS)
		}
		if name == zone {
			apex = append(apex, types...)
			continue
		}
		names = append(names, sign.Name{Name: name, Types: types})
	}
	for name := range t.ENTs {
		if zoneOf(zones, name) == zone {
			names = append(names, sign.Name{Name: name})
		}
	}
	return append(names, sign.Name{Name: zone, Types: apex})
}
