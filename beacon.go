package gslb

import (
	"strings"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// beacon is the beacon record a name one label under it is answered as,
// and notes the resolver's query for the resolver map; nil for any other
// name. Any label is answered; only labels gslb minted count.
//
//go:noinline
func (g *GSLB) beacon(v *policy.View, qname string, w dns.ResponseWriter) (*table.Record, bool) {
	b := g.opts.Resolvers.Beacon
	// One label under b, cut without building "."+b on every query.
	n := len(qname) - len(b) - 1
	if n < 1 || !strings.HasSuffix(qname, b) || qname[n] != '.' || strings.IndexByte(qname[:n], '.') >= 0 {
		return nil, false
	}
	label := qname[:n]
	rec := v.Table.Records[b]
	if rec == nil {
		return nil, false
	}
	if m := g.ctl.Resolvers(); m != nil {
		m.BeaconQuery(decide.RemoteAddr(w.RemoteAddr()), label)
	}
	return rec, true
}
