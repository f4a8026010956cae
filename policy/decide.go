package policy

import (
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Decision is the answer to one query for a record.
type Decision struct {
	scoring.Decision
	Winner *table.Node // nil when no node of the record has an address of the family
	State  string      // the winner's state
	// PerSubnet is set when the client's /24 (/48) picked the node among
	// equals: the answer holds for that subnet, not for the whole network
	// the location came from.
	PerSubnet bool
}

// Decide chooses rec's node for a client of the qtype's family (A or AAAA);
// subnet is the client's /24 (/48) key, which breaks ties.
func (v *View) Decide(rec *table.Record, qtype uint16, c *scoring.Client, subnet uint64) Decision {
	cand := rec.V4
	if qtype == dns.TypeAAAA {
		cand = rec.V6
	}
	d := Decision{Decision: scoring.Choose(c, v.Nodes, cand, v.Table.Topology, v.Params, subnet)}
	if d.Node >= 0 {
		d.Winner = &v.Table.Nodes[d.Node]
		d.State = v.Status[d.Node].State
	}
	d.PerSubnet = d.Tied
	return d
}
