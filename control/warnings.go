package control

import (
	"fmt"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"
)

// warn logs what a start of o with the node table t warns about. New
// calls it, so that the server's start and gslb check, which both build
// the control plane with New, say the same.
func warn(o *config.Options, t *table.Table) {
	for _, w := range ladderWarnings(o) {
		log.Warning(w)
	}
	if o.DNSSEC != nil && len(o.Fall.Zones) > 0 {
		log.Warningf("dnssec with fallthrough in %s: gslb signs only its own answers; the names it passes on must be signed by the next plugins (the dnssec plugin with the same keys), or validating resolvers reject them", o.File)
	}
	for _, w := range UnreachableNames(o, t) {
		log.Warning(w)
	}
}

// UnreachableNames are the warnings for the names the zones' SOA and NS
// point to that gslb itself answers NXDOMAIN for: in a gslb zone, not a
// record of t, and not passed on by fallthrough. A resolver sent there
// finds no server.
func UnreachableNames(o *config.Options, t *table.Table) []string {
	unreachable := func(name string) bool {
		return plugin.Zones(o.Zones).Matches(name) != "" && t.Records[name] == nil && !o.Fall.Through(name)
	}
	var out []string
	for _, ns := range t.Nameservers {
		if unreachable(ns) {
			out = append(out, fmt.Sprintf("name server %s (the node table's nameservers) is in the zone but not a record of the node table: "+
				"gslb answers NXDOMAIN for it; add it to records, or pass it on with fallthrough to a plugin that has it", ns))
		}
	}
	for _, zone := range o.Zones {
		mname, from := o.SOA.MName, "soa mname"
		if mname == "" {
			mname, from = dnsutil.Join("ns1", "dns", zone), "the default MNAME, without nameservers in the node table"
			if len(t.Nameservers) > 0 {
				continue // said above
			}
		}
		if unreachable(mname) {
			out = append(out, fmt.Sprintf("zone %s: the SOA's MNAME %s (%s) is in the zone but not a record of the node table: "+
				"gslb answers NXDOMAIN for it; list the zone's name servers under nameservers (and as records), "+
				"set soa { mname NAME }, or pass it on with fallthrough", zone, mname, from))
		}
	}
	return out
}

// ladderWarnings say loudly which tiers a ladder leaves out: the clients
// whose nodes are only there fail open, to the least loaded node anywhere.
func ladderWarnings(o *config.Options) []string {
	var out []string
	for _, l := range []struct {
		opt string
		l   *scoring.Ladder
	}{{"ladder", o.Params.Ladder}, {"ladder6", o.Params.Ladder6}} {
		if l.l == nil {
			continue
		}
		if miss := l.l.Missing(); len(miss) > 0 {
			out = append(out, fmt.Sprintf("%s (%s:%d) leaves out %s: a client whose nodes are only on those tiers gets the least loaded node of the record, wherever it is",
				l.opt, o.File, o.Lines[l.opt], strings.Join(miss, ", ")))
		}
	}
	return out
}
