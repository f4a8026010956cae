package scoring

import (
	"math"
	"slices"
	"sync"

	"github.com/gslbdns/gslb/internal/splitmix"
)

// tieEpsilon is how close to the best score a node must be to tie with it.
const tieEpsilon = 1e-9

// Input is one decision's question.
type Input struct {
	Client  *Client // nil or zero: location-free
	Nodes   []Node
	Cand    []int // indices into Nodes: the record's nodes of the queried family
	Topo    *Topology
	Params  *Params // nil: DefaultParams
	Quality *Links  // nil: no quality matrix
	Key     uint64  // the client's subnet: ties, the spread and shedding are per subnet
	// Priority is the record's class: between the shed_load watermarks a
	// low one sheds twice the normal share, a high one half of it.
	Priority Priority
	V6       bool // an AAAA query: Params.Ladder6 orders the tiers
}

// Choose picks the best node among cand (indices into nodes; the record's
// nodes that have an address of the queried family). tieKey identifies the
// client subnet: equal best scores are broken by rendezvous hashing of
// (tieKey, node ID), so equal nodes share clients stably per subnet.
// A nil topo has no neighbours and no regions; a nil p means DefaultParams.
func Choose(c *Client, nodes []Node, cand []int, topo *Topology, p *Params, tieKey uint64) Decision {
	return Decide(&Input{Client: c, Nodes: nodes, Cand: cand, Topo: topo, Params: p, Key: tieKey})
}

// Decide runs the ladder and the score: the best tier that holds a usable
// node, its nodes' scores, then the subnet's pick among the best.
func Decide(in *Input) Decision {
	var buf [16]scored
	var p Prepared
	p.contenders = prepare(in, buf[:0], &p)
	return p.Pick(in.Key)
}

// Prepare is Decide up to the subnet's pick: the tier and the nodes the
// subnet may pick among, with their scores. When PerSubnet reports false it
// holds for every subnet of the client's location, and Pick gives what
// Decide would for any key.
func Prepare(in *Input) *Prepared {
	// The contenders are gathered in a scratch buffer with room for every
	// candidate and kept in one allocation of their size: a view's warm-up
	// prepares many, and a location-free client's tier before nearOnly
	// may hold most of the nodes.
	sp := scratch.Get().(*[]scored)
	if cap(*sp) < len(in.Cand) {
		*sp = make([]scored, 0, len(in.Cand))
	}
	p := new(Prepared)
	if near := prepare(in, (*sp)[:0], p); len(near) > 0 {
		p.contenders = make([]scored, len(near))
		copy(p.contenders, near)
	}
	scratch.Put(sp)
	return p
}

var scratch = sync.Pool{New: func() any { return new([]scored) }}

// Prepared is a decision before the client's subnet picks its node.
type Prepared struct {
	params   *Params
	nodes    []Node
	d        Decision // the tier, the candidate count, RTT and distance unset
	best     float64
	failOpen bool
	spread   bool
	// contenders are the nodes the subnet picks among: those within the
	// spread of the best score, or tied with it, or the least loaded when
	// failing open.
	contenders []scored
	// tail is the order after the contenders, for several answers.
	tail      []int32
	perSubnet bool // a node turned some subnets away: the tier depends on the subnet
}

// PerSubnet reports whether the preparation itself depended on the
// subnet (a node shedding or ramping), so that it is not to be shared.
func (p *Prepared) PerSubnet() bool { return p.perSubnet }

// prepare fills out but its contenders, which it returns: gathered in buf
// (whose array they may share) and past its capacity on the heap.
func prepare(in *Input, buf []scored, out *Prepared) []scored {
	pp := in.Params
	if pp == nil {
		pp = &DefaultParams
	}
	*out = Prepared{params: pp, nodes: in.Nodes, d: Decision{Node: -1, Tier: TierNone, DistanceKm: -1, RTTMs: -1}}
	if len(in.Cand) == 0 {
		return nil
	}
	ch := chooser{in: in, p: pp, lc: newLadderClient(in.Client, in.Topo, pp.LadderFor(in.V6))}
	// Pass 1: the best tier holding a usable node, and its highest cost.
	tier, count, maxCost := TierFailOpen, 0, 0.0
	for _, i := range in.Cand {
		if !ch.usable(i) {
			continue
		}
		n := &in.Nodes[i]
		switch t := ch.lc.tierOf(n, tier); {
		case ch.lc.l.Better(t, tier):
			tier, count, maxCost = t, 1, n.Cost
		case t == tier && t != TierFailOpen: // fail_open: on no rung
			count++
			maxCost = max(maxCost, n.Cost)
		}
	}
	out.perSubnet = ch.perSubnet
	out.d.Ramping = ch.ramping != 0 && !ch.lc.l.Better(tier, ch.ramping)
	out.d.Shedding = ch.shedding != 0 && !ch.lc.l.Better(tier, ch.shedding)
	if count == 0 {
		out.failOpen, out.d.Tier = true, TierFailOpen
		return leastLoaded(in.Nodes, in.Cand, buf)
	}
	// Pass 2: score that tier's usable nodes; keep those near the best.
	ch.s = newScorer(ch.lc.c, &pp.Weights, maxCost, in.Quality)
	out.d.Tier, out.d.Candidates = tier, count
	out.spread = pp.Spread > 0
	floor := func(best float64) float64 {
		if out.spread {
			return best*(1-pp.Spread) - tieEpsilon
		}
		return best - tieEpsilon
	}
	near := buf
	best, overflow := math.Inf(-1), false
	for _, i := range in.Cand {
		sc, ok := ch.score(i, tier)
		if !ok {
			continue
		}
		best = max(best, sc.score)
		if overflow || sc.score < floor(best) {
			continue
		}
		near = slices.DeleteFunc(near, func(o scored) bool { return o.score < floor(best) })
		if buf != nil && len(near) == cap(buf) {
			overflow = true // past the stack buffer: score the tier again below
			continue
		}
		near = append(near, sc)
	}
	if overflow {
		near = near[:0:0]
		for _, i := range in.Cand {
			if sc, ok := ch.score(i, tier); ok && sc.score >= floor(best) {
				near = append(near, sc)
			}
		}
	}
	near = nearOnly(near)
	out.best = best
	if pp.Answers > 1 {
		out.tail = ch.tail(tier, near)
	}
	return near
}

// Pick is the subnet key's choice among the contenders.
func (p *Prepared) Pick(key uint64) Decision {
	var d Decision
	p.PickInto(key, &d)
	return d
}

// PickInto is Pick writing into d, so that no decision is copied through
// the caller's stack frame.
func (p *Prepared) PickInto(key uint64, d *Decision) {
	*d = p.d
	if len(p.contenders) == 0 {
		return
	}
	win := 0
	switch {
	case p.spread && !p.failOpen && len(p.contenders) > 1:
		w := -1.0
		for k := range p.contenders {
			if x := weight(key, p.nodes, p.contenders[k]); x > w {
				win, w = k, x
			}
		}
	case len(p.contenders) > 1:
		w := -1.0
		for k, sc := range p.contenders {
			if x := tieWeight(key, &p.nodes[sc.i]); x > w {
				win, w = k, x
			}
		}
	}
	w := p.contenders[win]
	d.Node, d.Tied = int(w.i), len(p.contenders) > 1 || p.perSubnet
	if !p.failOpen {
		d.Score, d.DistanceKm, d.RTTMs = w.score, w.km, w.rtt
	}
	d.Order[0], d.NOrder = w.i, 1
	if p.params.Answers > 1 {
		p.order(d, key)
	}
}

// order fills d.Order: the contenders by the subnet's preference, then the
// tail, up to Params.Answers.
func (p *Prepared) order(d *Decision, key uint64) {
	n := min(p.params.Answers, MaxAnswers)
	type ranked struct {
		i int32
		r float64
	}
	var rs [MaxAnswers * 2]ranked
	k := 0
	for _, sc := range p.contenders {
		if k == len(rs) {
			break
		}
		r := sc.score
		if p.spread {
			r = weight(key, p.nodes, sc)
		}
		rs[k] = ranked{sc.i, r}
		k++
	}
	slices.SortStableFunc(rs[:k], func(a, b ranked) int { return cmpDesc(a.r, b.r) })
	d.NOrder = 0
	add := func(i int32) {
		if d.NOrder < n && !slices.Contains(d.Order[:d.NOrder], i) {
			d.Order[d.NOrder] = i
			d.NOrder++
		}
	}
	add(int32(d.Node))
	for _, r := range rs[:k] {
		add(r.i)
	}
	for _, i := range p.tail {
		add(i)
	}
}

// scored is a node of the winning tier with its score.
type scored struct {
	i         int32
	score, km float64
	rtt       float64
}

// weight is a node's rendezvous weight for a subnet: larger for a higher
// score and capacity, comparable across nodes. A node's share is then
// proportional to score × capacity, and changing one node's capacity moves
// subnets only to or from it.
func weight(key uint64, nodes []Node, sc scored) float64 {
	if sc.score <= 0 {
		return 0
	}
	return -sc.score * capacity(&nodes[sc.i]) / math.Log(unit(key, nodes[sc.i].ID, saltSpread))
}

// tieWeight is weight for nodes of equal score. With equal capacities it
// orders nodes as tieHash does, so subnets keep the node they had.
func tieWeight(key uint64, n *Node) float64 {
	u := (float64(tieHash(key, n.ID)>>11) + 0.5) / (1 << 53)
	return -capacity(n) / math.Log(u)
}

// capacity is n's weight; 0 (unset) reads as 1.
func capacity(n *Node) float64 {
	if n.Weight > 0 {
		return n.Weight
	}
	return 1
}

// Near-equals in score must be near-equals in distance too: the far end of
// the distance term is flat (2,000 km and 3,300 km score 0.047 and 0.030),
// so a spread of the score alone would send clients 1,300 km farther.
const (
	nearKm   = 100  // the contenders lie within max(nearKm, nearFrac × nearest) ...
	nearFrac = 0.10 // ... of the nearest contender's distance
)

// nearOnly drops the contenders farther than the window above the nearest
// one; without distances it keeps them all.
func nearOnly(near []scored) []scored {
	if len(near) < 2 {
		return near
	}
	nearest := math.Inf(1)
	for _, sc := range near {
		if sc.km >= 0 {
			nearest = min(nearest, sc.km)
		}
	}
	if math.IsInf(nearest, 1) {
		return near
	}
	limit := nearest + max(nearKm, nearFrac*nearest) + tieEpsilon
	return slices.DeleteFunc(near, func(sc scored) bool { return sc.km > limit })
}

// chooser holds one preparation's state.
type chooser struct {
	in        *Input
	p         *Params
	lc        ladderClient
	s         scorer
	perSubnet bool // a node turned some subnets away: the answer is per subnet
	// ramping and shedding are the best tiers of the nodes ramping back
	// and of those shedding load (TierNone: none): when as good as the
	// winner's, the answer may change soon.
	ramping, shedding Tier
}

// score scores node i when it is a usable node of tier.
func (ch *chooser) score(i int, tier Tier) (scored, bool) {
	n := &ch.in.Nodes[i]
	if !ch.usable(i) || ch.lc.tierOf(n, tier) != tier {
		return scored{}, false
	}
	var v [NumTerms]float64
	km := ch.s.values(i, n, &v)
	return scored{i: int32(i), score: ch.s.w.dot(&v), km: km, rtt: ch.s.rtt}, true
}

// usable reports whether node i may answer this client's subnet.
func (ch *chooser) usable(i int) bool { return ch.why(i) == "" }

// why says why node i may not answer this client's subnet: down, at the
// load cut-off, behind a lossy link, or among the subnets it turns away;
// "" when it may.
func (ch *chooser) why(i int) string {
	n := &ch.in.Nodes[i]
	p := ch.p
	limit := p.MaxLoad
	if p.ShedHigh > 0 {
		limit = p.ShedHigh
	}
	switch {
	case n.Down:
		return ReasonDown
	case n.Load >= limit:
		return ReasonOverloaded
	}
	keep, ramping := 1-n.Shed, n.Shed > 0
	if q := ch.in.Quality; q != nil && ch.lc.c != nil {
		if l, ok := q.Link(ch.lc.c.Province, ch.lc.c.ISP, i); ok {
			switch {
			case p.MaxLoss > 0 && l.Loss >= p.MaxLoss:
				return ReasonLossy
			case l.Feed && p.MaxErrorRate > 0 && l.ErrRate >= p.MaxErrorRate:
				return ReasonErrors
			}
			keep *= 1 - l.Shed
			ramping = ramping || l.Shed > 0
		}
	}
	if p.ShedHigh > 0 && n.Load > p.ShedLow {
		shed := (n.Load - p.ShedLow) / (p.ShedHigh - p.ShedLow)
		switch ch.in.Priority {
		case PriorityLow:
			shed = min(1, 2*shed)
		case PriorityHigh:
			shed /= 2
		}
		keep *= 1 - shed
	}
	if keep >= 1 {
		return ""
	}
	ch.perSubnet = true
	if ramping {
		ch.ramping = ch.lc.bestOf(n, ch.ramping)
	} else {
		ch.shedding = ch.lc.bestOf(n, ch.shedding)
	}
	if unit(ch.in.Key, n.ID, saltAdmit) < keep {
		return ""
	}
	return ReasonShed
}

// tail is the order after the contenders: the rest of the tier by score,
// then the usable nodes of the tiers below, by tier and score.
func (ch *chooser) tail(tier Tier, near []scored) []int32 {
	type ranked struct {
		i     int32
		tier  Tier
		score float64
	}
	var rest []ranked
	maxCost := 0.0
	for _, i := range ch.in.Cand {
		maxCost = max(maxCost, ch.in.Nodes[i].Cost)
	}
	s := ch.s
	s.maxCost = maxCost
	var v [NumTerms]float64
	for _, i := range ch.in.Cand {
		n := &ch.in.Nodes[i]
		if !ch.usable(i) || slices.ContainsFunc(near, func(sc scored) bool { return int(sc.i) == i }) {
			continue
		}
		t := ch.lc.tierOf(n, TierFailOpen)
		if t == TierFailOpen {
			continue // on no rung of this ladder
		}
		s.values(i, n, &v)
		rest = append(rest, ranked{int32(i), t, s.w.dot(&v)})
	}
	slices.SortStableFunc(rest, func(a, b ranked) int {
		if a.tier != b.tier {
			return int(ch.lc.l.rank[a.tier]) - int(ch.lc.l.rank[b.tier])
		}
		return cmpDesc(a.score, b.score)
	})
	out := make([]int32, len(rest))
	for k, r := range rest {
		out[k] = r.i
	}
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// leastLoaded are the nodes with the lowest load, Down ones included, for
// failing open: an answer that may work beats none.
func leastLoaded(nodes []Node, cand []int, buf []scored) []scored {
	low := math.Inf(1)
	for _, i := range cand {
		low = min(low, nodes[i].Load)
	}
	out := buf
	for _, i := range cand {
		if nodes[i].Load <= low+tieEpsilon {
			out = append(out, scored{i: int32(i), km: -1, rtt: -1})
		}
	}
	return out
}

// Salts keep a subnet's admission and its place in the spread independent.
const (
	saltAdmit  = 0x5bd1e9955bd1e995
	saltSpread = 0x2545f4914f6cdd1d
)

// unit is a uniform number in (0, 1) for a subnet and a node.
func unit(key uint64, id string, salt uint64) float64 {
	return (float64(splitmix.Mix(key^fnv1a(id)^salt)>>11) + 0.5) / (1 << 53)
}

// tieHash is the rendezvous weight of a node for a client subnet.
func tieHash(key uint64, id string) uint64 { return splitmix.Mix(key ^ fnv1a(id)) }

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
