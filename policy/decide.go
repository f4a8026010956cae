package policy

import (
	"slices"

	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Query is what a decision depends on.
type Query struct {
	Record *table.Record
	QType  uint16 // A or AAAA
	Client scoring.Client
	Subnet uint64           // the client's /24 (/48) key: it breaks ties
	Pin    *overrides.Entry // nodes an override or the admin API pinned; nil: none
}

// Decision is the answer to one query for a record.
type Decision struct {
	scoring.Decision
	Winner  *table.Node // nil when no node of the record has an address of the family
	State   string      // the winner's state
	Vantage string      // the fleet vantage whose verdict the winner's state is; "": own probes
	// PerSubnet is set when the client's /24 (/48) picked the node among
	// equals: the answer holds for that subnet, not for the whole network
	// the location came from.
	PerSubnet bool
}

// Decide chooses q's node.
func (v *View) Decide(q *Query) Decision {
	cand := q.Record.V4
	if q.QType == dns.TypeAAAA {
		cand = q.Record.V6
	}
	d := Decision{Decision: v.pinned(q, cand)}
	if d.Tier == scoring.TierNone {
		d.Decision = v.decide(q, cand)
	}
	if d.Node >= 0 {
		d.Winner = &v.Table.Nodes[d.Node]
		st := &v.StatusFor(q.Client.ISP)[d.Node]
		d.State, d.Vantage = st.State, st.Vantage
	}
	d.PerSubnet = d.Tied
	return d
}

// decide runs the ladder and the score, or picks from the cached
// preparation of the client's location.
func (v *View) decide(q *Query, cand []int) scoring.Decision {
	if v.cache == nil || v.anyShed && slices.ContainsFunc(cand, func(i int) bool { return v.shedding[i] }) {
		return v.full(q, cand)
	}
	h := hashKey(q.Record, q.QType, &q.Client)
	p := v.cache.get(v.gen, h, q.Record, q.QType, &q.Client)
	if p == nil {
		p = v.prepare(q, cand, h)
	}
	return p.Pick(q.Subnet)
}

// full decides without the cache, out of line like prepare.
//
//go:noinline
func (v *View) full(q *Query, cand []int) scoring.Decision {
	return scoring.Decide(v.input(q, cand))
}

// prepare is a cache miss: out of line, so that a hit runs on a small
// stack frame (a query's goroutine grows its stack by copying it).
//
//go:noinline
func (v *View) prepare(q *Query, cand []int, h uint64) *scoring.Prepared {
	p := scoring.Prepare(v.input(q, cand))
	if !p.PerSubnet() {
		v.cache.put(v.gen, h, q.Record, q.QType, &q.Client, p)
	}
	return p
}

// input copies the query's client, so that only a miss allocates.
func (v *View) input(q *Query, cand []int) *scoring.Input {
	c := q.Client
	nodes, _ := v.nodesFor(c.ISP)
	return &scoring.Input{Client: &c, Nodes: nodes, Cand: cand, Topo: v.Table.Topology,
		Params: v.Params, Quality: v.Links, Key: q.Subnet}
}

// pinned chooses among the pinned nodes of cand while one is usable; it
// returns TierNone to let the ladder decide.
func (v *View) pinned(q *Query, cand []int) scoring.Decision {
	if q.Pin == nil {
		return scoring.Decision{Tier: scoring.TierNone}
	}
	var sub []int
	for _, i := range cand {
		if q.Pin.Pinned(v.Table.Nodes[i].ID) {
			sub = append(sub, i)
		}
	}
	nodes, _ := v.nodesFor(q.Client.ISP)
	d := scoring.Decide(&scoring.Input{Client: &q.Client, Nodes: nodes, Cand: sub, Topo: v.Table.Topology,
		Params: v.Params, Quality: v.Links, Key: q.Subnet})
	if d.Tier == scoring.TierNone || d.Tier == scoring.TierFailOpen {
		return scoring.Decision{Tier: scoring.TierNone}
	}
	d.Tier = scoring.TierOverride
	return d
}

// Trace is what the ladder saw of every node of the record with an
// address of the queried family, for a decision Decide made on q.
func (v *View) Trace(q *Query) []scoring.NodeTrace {
	cand := q.Record.V4
	if q.QType == dns.TypeAAAA {
		cand = q.Record.V6
	}
	return scoring.Trace(v.input(q, cand))
}
