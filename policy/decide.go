package policy

import (
	"slices"
	"time"

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
	// Placed is the override that corrected the client's location; nil:
	// none. Its expiry bounds the answer's ttl.
	Placed *overrides.Entry
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
	// Volatile says why the answer may change soon; Steady: nothing
	// known will change it.
	Volatile Volatility
}

// Volatility is why an answer may change soon.
type Volatility uint8

// The volatilities, each with its ttl reason.
const (
	Steady Volatility = iota
	Ramping
	Shedding
	ProbeFailed
	FailingOpen
)

var volatilityReasons = [...]string{Steady: TTLStable, Ramping: TTLRamping, Shedding: TTLShedding, ProbeFailed: TTLProbeFailed, FailingOpen: TTLFailOpen}

// String is the volatility's ttl reason.
func (v Volatility) String() string { return volatilityReasons[v] }

// The reasons of an answer's ttl, for the metadata gslb/ttl_reason.
const (
	TTLStable      = "stable"       // nothing known will change the answer: MAX
	TTLRamping     = "ramping"      // a node of the record is taking its subnets back
	TTLShedding    = "shedding"     // a node of the record sheds load between the watermarks
	TTLProbeFailed = "probe_failed" // an answered node failed a probe in the health window
	TTLFailOpen    = "fail_open"    // no usable node: any health change changes the answer
	TTLExpiry      = "expiry"       // a pin or override the answer used ends within MAX
)

// TTL is the answer to q's ttl and its reason: the record's ttl (MAX)
// for a stable answer; MIN when it may change; the time to the end of a
// pin or location override it used when that comes first, but not under
// MIN. MIN is the record's own, else min (0: none given, MIN is MAX). now
// is read only for an answer that used an expiring pin or override.
func (d *Decision) TTL(q *Query, min uint32, now time.Time) (uint32, string) {
	rec := q.Record
	hi, lo := rec.TTL, rec.TTL
	switch {
	case rec.MinTTL > 0:
		lo = rec.MinTTL
	case min > 0 && min < hi:
		lo = min
	}
	if d.Volatile != Steady {
		return lo, d.Volatile.String()
	}
	// Only a pin or an override expires: no call for the rest, on the
	// query's stack.
	if d.Tier != scoring.TierOverride && q.Placed == nil {
		return hi, TTLStable
	}
	if exp := d.expires(q); !exp.IsZero() {
		left := exp.Sub(now)
		if left < time.Duration(hi)*time.Second {
			secs := uint32(max(0, (left+time.Second-1)/time.Second))
			return max(secs, lo), TTLExpiry
		}
	}
	return hi, TTLStable
}

// Decide chooses q's node.
func (v *View) Decide(q *Query) Decision {
	var d Decision
	v.DecideInto(q, &d)
	return d
}

// DecideInto is Decide writing into d. The server decides on a stack that
// starts small and is copied to grow: d is the caller's, the pin's
// decision is made out of line, and no decision is returned by value.
func (v *View) DecideInto(q *Query, d *Decision) {
	cand := candidates(q.Record, q.QType)
	// Field by field: d may be on the heap, where a whole-struct write
	// pays the garbage collector's write barrier on every pointer.
	if q.Pin == nil || !v.pinned(q, cand, &d.Decision) {
		v.decide(q, cand, &d.Decision)
	}
	v.Finish(d, q.Client.ISP)
}

// Finish sets what the view says of d's scoring decision, for a client of
// carrier isp: the winner, its state, whether the answer holds per subnet,
// how soon it may change. DecideInto calls it, and so does a memo of
// scoring decisions, to answer as DecideInto would.
func (v *View) Finish(d *Decision, isp string) {
	d.Winner, d.State, d.Vantage = nil, "", ""
	if d.Node >= 0 {
		d.Winner = &v.Table.Nodes[d.Node]
		st := &v.StatusFor(isp)[d.Node]
		d.State, d.Vantage = st.State, st.Vantage
	}
	d.PerSubnet = d.Tied
	d.Volatile = v.volatile(&d.Decision)
}

// expires is when the first pin or location override the decision used
// ends; zero: never.
func (d *Decision) expires(q *Query) time.Time {
	var exp time.Time
	if d.Tier == scoring.TierOverride {
		exp = q.Pin.Expires
	}
	if q.Placed != nil && !q.Placed.Expires.IsZero() && (exp.IsZero() || q.Placed.Expires.Before(exp)) {
		exp = q.Placed.Expires
	}
	return exp
}

// volatile says why d may change soon: failing open, a node on its tier
// or a better one ramping or shedding (the subnet may move to or from
// it), a probe of an answered node failing; Steady when nothing known
// will change it.
func (v *View) volatile(d *scoring.Decision) Volatility {
	switch {
	case d.Tier == scoring.TierFailOpen:
		return FailingOpen
	case d.Node < 0:
		return Steady
	}
	switch {
	case d.Ramping:
		return Ramping
	case d.Shedding:
		return Shedding
	}
	if v.anyFails {
		for _, i := range d.Order[:d.NOrder] {
			if v.Nodes[i].Fails > 0 {
				return ProbeFailed
			}
		}
	}
	return Steady
}

// decide runs the ladder and the score, or picks from the cached
// preparation of the client's location, into d.
func (v *View) decide(q *Query, cand []int, d *scoring.Decision) {
	if v.cache == nil || v.shed(cand) {
		v.full(q, cand, d)
		return
	}
	h := hashKey(q.Record, q.QType, &q.Client)
	var p *scoring.Prepared
	if e := v.cache.get(v.gen, h, q.Record, q.QType, &q.Client); e != nil {
		if !e.asked.Load() { // one store per entry: hits share its line
			e.asked.Store(true)
		}
		p = e.prep
	} else {
		p = v.prepare(q, cand, h, false)
	}
	p.PickInto(q.Subnet, d)
}

// full decides without the cache, out of line like prepare.
//
//go:noinline
func (v *View) full(q *Query, cand []int, d *scoring.Decision) {
	*d = scoring.Decide(v.input(q, cand))
}

// prepare is a cache miss: out of line, so that a hit runs on a small
// stack frame (a query's goroutine grows its stack by copying it).
//
//go:noinline
func (v *View) prepare(q *Query, cand []int, h uint64, ahead bool) *scoring.Prepared {
	p := scoring.Prepare(v.input(q, cand))
	if !p.PerSubnet() {
		v.cache.put(v.gen, h, q.Record, q.QType, &q.Client, p, ahead)
	}
	return p
}

// input copies the query's client, so that only a miss allocates.
func (v *View) input(q *Query, cand []int) *scoring.Input {
	c := q.Client
	nodes, _ := v.nodesFor(c.ISP)
	return &scoring.Input{Client: &c, Nodes: nodes, Cand: cand, Topo: v.Table.Topology,
		Params: v.Params, Quality: v.Links, Key: q.Subnet, Priority: q.Record.Priority, V6: q.QType == dns.TypeAAAA}
}

// pinned chooses into d among the pinned nodes of cand while one is
// usable; false lets the ladder decide. Out of line: its frame holds the
// scoring input, and most queries have no pin.
//
//go:noinline
func (v *View) pinned(q *Query, cand []int, d *scoring.Decision) bool {
	var sub []int
	for _, i := range cand {
		if q.Pin.Pinned(v.Table.Nodes[i].ID) {
			sub = append(sub, i)
		}
	}
	nodes, _ := v.nodesFor(q.Client.ISP)
	pd := scoring.Decide(&scoring.Input{Client: &q.Client, Nodes: nodes, Cand: sub, Topo: v.Table.Topology,
		Params: v.Params, Quality: v.Links, Key: q.Subnet, Priority: q.Record.Priority, V6: q.QType == dns.TypeAAAA})
	if pd.Tier == scoring.TierNone || pd.Tier == scoring.TierFailOpen {
		return false
	}
	pd.Tier = scoring.TierOverride
	*d = pd
	return true
}

// Trace is what the ladder saw of every node of the record with an
// address of the queried family, for a decision Decide made on q.
func (v *View) Trace(q *Query) []scoring.NodeTrace {
	cand := candidates(q.Record, q.QType)
	return scoring.Trace(v.input(q, cand))
}

// candidates are the record's nodes with an address of the queried family.
func candidates(rec *table.Record, qt uint16) []int {
	if qt == dns.TypeAAAA {
		return rec.V6
	}
	return rec.V4
}

// shed reports whether a node of cand is shedding: then its decision
// depends on the subnet and is not cached.
func (v *View) shed(cand []int) bool {
	return v.anyShed && slices.ContainsFunc(cand, func(i int) bool { return v.shedding[i] })
}
