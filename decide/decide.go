// Package decide decides one query top-down: the client's address (ECS or
// the resolver's), its location, the canary's pick, the policy's decision,
// the ECS scope, the all_down rule, the province match and the answer's
// order. The server, the admin API's explain and the gslb tool all decide
// through it; Explain is the same decision with a trace.
package decide

import (
	"context"
	"iter"
	"net"
	"net/netip"
	"time"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Source is what a decision reads of the control plane: the stable view,
// the canary in rollout (nil: none) and the locator.
type Source interface {
	View() *policy.View
	Canary() *canary.Rollout
	Locator() *locate.Locator
}

// Options are the Corefile options a decision follows.
type Options struct {
	ECSMin4, ECSMin6 uint8
	TrustECS         []netip.Prefix // resolvers whose ECS is believed; nil: all
	AllDownServfail  bool
	// MinTTL is the ttl of an answer that may change soon; 0: the
	// record's ttl.
	MinTTL uint32
	// SpreadPrefix4 and SpreadPrefix6 cut the network the spread hashes a
	// client on; 0: the defaults.
	SpreadPrefix4, SpreadPrefix6 uint8
	// Population: a query without usable ECS from a mapped resolver is
	// decided for its population.
	Population bool
	// BeaconTTL caps the ttl of a beacon's answer.
	BeaconTTL uint32
}

// OptionsOf picks a block's decision options.
func OptionsOf(o *config.Options) Options {
	opts := Options{ECSMin4: o.ECSMin4, ECSMin6: o.ECSMin6, TrustECS: o.TrustECS, AllDownServfail: o.AllDownServfail,
		MinTTL: o.MinTTL, SpreadPrefix4: o.SpreadPrefix4, SpreadPrefix6: o.SpreadPrefix6,
		Population: o.Resolvers != nil && o.Resolvers.Population}
	if o.Resolvers != nil {
		opts.BeaconTTL = o.Resolvers.TTL
	}
	return opts
}

// Mapper is a Source with a resolver map.
type Mapper interface {
	Resolvers() *resolvers.Map // nil: none
}

// Decider decides queries with what its source serves.
type Decider struct {
	src  Source
	opts Options
	// pops is the source's resolver map: the server's decisions feed it,
	// and with Population its populations decide; nil: none.
	pops *resolvers.Map
	memo *memo
}

// New returns a Decider over src.
func New(src Source, o Options) *Decider {
	d := &Decider{src: src, memo: new(memo)}
	if m, ok := src.(Mapper); ok {
		d.pops = m.Resolvers()
	}
	if o.SpreadPrefix4 == 0 {
		o.SpreadPrefix4 = locate.DefaultSpreadPrefix4
	}
	if o.SpreadPrefix6 == 0 {
		o.SpreadPrefix6 = locate.DefaultSpreadPrefix6
	}
	d.opts = o
	return d
}

// Query is one question for a record of the stable view.
type Query struct {
	View   *policy.View
	Record *table.Record
	QType  uint16
	Remote net.Addr          // the resolver
	ECS    *dns.EDNS0_SUBNET // the query's option; nil: none
	// Beacon: the question is a beacon name under Record's; its re-query
	// intervals say nothing.
	Beacon bool
}

// Outcome is what one query saw and chose; it feeds the answer, the
// metrics and, when the metadata plugin is on, the log.
type Outcome struct {
	Client   netip.Addr
	FromECS  bool
	ECS      *dns.EDNS0_SUBNET
	Loc      locate.Result
	Decision policy.Decision
	Scope    uint8 // the reply's ECS scope
	// KeyScope is the scope of a reply to an ECS query of the client's
	// /24 (/48): what a resolver caches the answer for.
	KeyScope uint8
	// Unit is the network the spread and ties hash the client on (its
	// location's network, cut to its place's unit or to spread_prefix,
	// see locate.Result.SpreadUnit), UnitBits its length.
	Unit     locate.Key
	UnitBits uint8
	// TTL is the answer's ttl, TTLReason why (policy.TTLStable, ...).
	TTL       uint32
	TTLReason string
	QType     uint16
	// The policy decided under: the view and record of the stable table,
	// or of the candidate table for a subnet in the canary.
	View     *policy.View
	Record   *table.Record
	Canary   *canary.Rollout // the rollout the subnet was checked against; nil: none
	InCanary bool
	// Population decided for the resolver's clients, for a query without
	// usable ECS; nil: none did. PopulationShare is the share of its
	// clients whose node the answer is.
	Population      *resolvers.Population
	PopulationShare float64
	// Servfail: every node is down and all_down servfail says so.
	Servfail bool
	// Located: answered, and the client's province is known: it counts
	// for the cross-province ratio. Same: and the node is in it.
	Located, Same bool
	// pq is the question to the policy (policyQuery); tok the locator's
	// Token before the location, for the memo. On the heap with out: a
	// query's stack grows by copying.
	pq  policy.Query
	tok locate.Token
}

// Decide fills out for q, and tells the resolver map of it.
func (d *Decider) Decide(ctx context.Context, q *Query, out *Outcome) {
	d.decide(ctx, q, out, nil)
	if d.pops != nil {
		d.observe(q, out)
	}
}

// DecideHTTPS fills out4 and out6 for an HTTPS query q, and tells the
// resolver map of it once, as the decision it is counted as.
func (d *Decider) DecideHTTPS(ctx context.Context, q *Query, out4, out6 *Outcome) {
	q.QType = dns.TypeA
	d.decide(ctx, q, out4, nil)
	q.QType = dns.TypeAAAA
	d.decide(ctx, q, out6, nil)
	if d.pops != nil {
		d.observe(q, Counted(out4, out6))
	}
}

// decide is Decide; with steps, it keeps every location source's say.
func (d *Decider) decide(ctx context.Context, q *Query, out *Outcome, steps *[]locate.Step) {
	d.clientOf(q.Remote, q.ECS, out)
	if steps != nil {
		d.trace(ctx, out, steps)
	} else {
		l := d.src.Locator()
		out.tok = l.Token()
		placed := false
		if out.FromECS && !q.Beacon {
			var hit bool
			if hit, placed = d.memo.answer(d, l, q, out); hit {
				return
			}
		}
		if !placed {
			l.LocateInto(ctx, out.Client, &out.Loc)
		}
	}
	out.Population = nil
	if !out.FromECS && d.opts.Population && d.pops != nil && out.Loc.Override.Pin == nil {
		if p := d.pops.Snapshot().Lookup(out.Client); p != nil {
			forPopulation(p, q, out)
		}
	}
	d.choose(q.View, q.Record, q.QType, out)
	if q.Beacon {
		out.TTL = min(out.TTL, d.opts.BeaconTTL)
	} else if steps == nil && out.Loc.Table != 0 {
		d.memo.keep(d, d.src.Locator(), q, out)
	}
}

// forPopulation places out's client where the population of its resolver
// is, in place of the resolver's own location (and of an override that
// corrected it; a pin of nodes still wins): at the place of its largest
// places whose node wins for the largest share of its clients. The key
// (the canary's and the spread's) stays the resolver's network.
func forPopulation(p *resolvers.Population, q *Query, out *Outcome) {
	out.Population = p
	out.Loc.Override.Location = nil
	c := populationChoice(p, q, out.Loc.Key)
	out.Loc.Location = *p.Places[c.Place]
	out.PopulationShare = c.Share
}

// populationChoice is the place of p that q is decided for: cached per
// view, record and type, so that a query pays one atomic load.
func populationChoice(p *resolvers.Population, q *Query, key locate.Key) *resolvers.Choice {
	slot := &p.Choices[(resolvers.NameHash(q.Record.Name)^uint32(q.QType))&(resolvers.ChoiceSlots-1)]
	if c := slot.Load(); c != nil && c.View == any(q.View) && c.Record == any(q.Record) && c.QType == q.QType {
		return c
	}
	c := choosePlace(p, q, key)
	slot.Store(c)
	return c
}

// choosePlace decides q for each of p's largest places, and picks the
// node that wins for the largest share of its clients, at the largest
// place it wins: the best expected answer when a place's clients either
// get their own node or not. Out of line: it allocates the choice.
//
//go:noinline
func choosePlace(p *resolvers.Population, q *Query, key locate.Key) *resolvers.Choice {
	var winners [resolvers.TopPlaces]int
	var dc policy.Decision
	for i, l := range p.Places {
		pq := policy.Query{Record: q.Record, QType: q.QType, Client: policy.ClientOf(l), Subnet: uint64(key)}
		q.View.DecideInto(&pq, &dc)
		winners[i] = dc.Node
	}
	best, bestShare := 0, -1.0
	for i := range p.Places {
		var sum float64
		for j := range p.Places {
			if winners[j] == winners[i] {
				sum += p.Shares[j]
			}
		}
		if sum > bestShare+1e-9 {
			best, bestShare = i, sum
		}
	}
	return &resolvers.Choice{View: q.View, Record: q.Record, QType: q.QType, Place: best, Share: bestShare}
}

// observe tells the resolver map of a decided query.
func (d *Decider) observe(q *Query, out *Outcome) {
	var fam, bits uint8
	if q.ECS != nil {
		fam, bits = uint8(q.ECS.Family), q.ECS.SourceNetmask
	}
	var client netip.Addr
	if out.FromECS {
		client = out.Client
	}
	var name uint32
	if !q.Beacon {
		name = resolvers.NameHash(q.Record.Name)
	}
	d.pops.Observe(RemoteAddr(q.Remote), client, fam, bits, out.FromECS, out.Population != nil, name, out.TTL)
}

// trace is Explain's location, out of line: the server's queries run on a
// stack that grows by copying, and must not carry its frame.
//
//go:noinline
func (d *Decider) trace(ctx context.Context, out *Outcome, steps *[]locate.Step) {
	out.Loc, *steps = d.src.Locator().Trace(ctx, out.Client)
}

// clientOf sets the address the decision is for: the ECS address when it
// is specific enough and the resolver is trusted with it, else the
// resolver's.
func (d *Decider) clientOf(remote net.Addr, ecs *dns.EDNS0_SUBNET, out *Outcome) {
	out.ECS = ecs
	if a, ok := ecsClient(ecs, d.opts.ECSMin4, d.opts.ECSMin6); ok && d.trustsECS(remote) {
		out.Client, out.FromECS = a, true
		return
	}
	out.Client, out.FromECS = RemoteAddr(remote), false
}

// choose decides for out's location, under the canary's table when its
// subnet is in the canary, and sets the reply's scope and what the
// answer counts as.
func (d *Decider) choose(v *policy.View, rec *table.Record, qtype uint16, out *Outcome) {
	out.View, out.Record, out.QType, out.InCanary = v, rec, qtype, false
	cn := d.src.Canary()
	out.Canary = cn
	if cn != nil && cn.Picks(out.Loc.Key) {
		if cv := cn.View.Load(); cv != nil {
			if crec := cv.Table.Records[rec.Name]; crec != nil {
				out.View, out.Record, out.InCanary = cv, crec, true
			}
		}
	}
	out.Unit, out.UnitBits = out.Loc.SpreadUnit(d.opts.SpreadPrefix4, d.opts.SpreadPrefix6)
	q := policyQuery(out)
	out.View.DecideInto(q, &out.Decision)
	d.settle(q, cn, out)
}

// settle sets what follows from out's decision, made for q: the ttl, the
// scopes, all_down servfail, the province match.
func (d *Decider) settle(q *policy.Query, cn *canary.Rollout, out *Outcome) {
	var now time.Time
	if out.Decision.Tier == scoring.TierOverride || q.Placed != nil {
		now = time.Now() // only an expiring pin or override reads the clock
	}
	out.TTL, out.TTLReason = out.Decision.TTL(q, d.opts.MinTTL, now)
	// With a canary, the subnet chose the policy: an answer must not be
	// cached for subnets of the other one.
	canaried := cn != nil && cn.Active()
	keyFamily, keyBits := uint16(1), out.Loc.Key.Bits()
	if !out.Loc.Key.Is4() {
		keyFamily = 2
	}
	out.KeyScope = out.replyScope(keyFamily, keyBits, canaried)
	out.Scope = 0
	if out.FromECS {
		out.Scope = out.replyScope(out.ECS.Family, out.ECS.SourceNetmask, canaried)
	}
	if out.Decision.Tier == scoring.TierFailOpen && out.Record.Fallback != "" {
		out.Decision.Tier = scoring.TierFallback
	}
	w := out.Decision.Winner
	out.Servfail = w != nil && out.Decision.Tier == scoring.TierFailOpen && d.opts.AllDownServfail
	// A fallback answer is no node's: it counts in no province.
	out.Located = w != nil && !out.Servfail && out.Decision.Tier != scoring.TierFallback && out.Loc.Province != ""
	out.Same = out.Located && out.Loc.Province == w.Province && out.Loc.Country == w.Country
}

// policyQuery is out's question to the policy, kept in out: on choose's
// frame it would deepen the query's stack past its next size.
func policyQuery(out *Outcome) *policy.Query {
	q := &out.pq
	q.Record, q.QType, q.Subnet, q.Pin, q.Placed = out.Record, out.QType, uint64(out.Unit), out.Loc.Override.Pin, out.Loc.Override.Location
	policy.ClientInto(&out.Loc.Location, &q.Client)
	return q
}

// Policy is the policy the decision was made under: stable or canary.
func (o *Outcome) Policy() string {
	if o.InCanary {
		return canary.PolicyCanary
	}
	return canary.PolicyStable
}

// CNAME is the answer's name when it is a CNAME alone: the record's
// fallback, or the winner's when it is a cname node; "" otherwise.
func (o *Outcome) CNAME() string {
	w := o.Decision.Winner
	switch {
	case w == nil || o.Servfail:
		return ""
	case o.Decision.Tier == scoring.TierFallback:
		return o.Record.Fallback
	}
	return w.CNAME
}

// Addresses are the answer's addresses of the queried family, node by
// node in the decision's order: the winner first. A cname node gives none:
// a CNAME cannot stand beside other records.
func (o *Outcome) Addresses() iter.Seq2[*table.Node, netip.Addr] {
	return func(yield func(*table.Node, netip.Addr) bool) {
		for k := range o.Decision.NOrder {
			n, addrs := o.Answered(k)
			for _, a := range addrs {
				if !yield(n, a) {
					return
				}
			}
		}
	}
}

// Answered is the k-th node of the decision's order (k < Decision.NOrder)
// and its addresses in the answer: Addresses without the iterator, whose
// frames deepen a query's stack.
func (o *Outcome) Answered(k int) (*table.Node, []netip.Addr) {
	n := &o.View.Table.Nodes[o.Decision.Order[k]]
	switch {
	case n.CNAME != "":
		return n, nil
	case o.QType == dns.TypeAAAA:
		return n, n.V6
	}
	return n, n.V4
}

// trustsECS reports whether the resolver at remote may speak for its
// clients: any resolver without trust_ecs.
func (d *Decider) trustsECS(remote net.Addr) bool {
	if len(d.opts.TrustECS) == 0 {
		return true
	}
	if _, tool := remote.(*assumedResolver); tool {
		return true
	}
	a := RemoteAddr(remote)
	for _, p := range d.opts.TrustECS {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
