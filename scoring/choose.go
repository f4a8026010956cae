package scoring

import (
	"math"
	"slices"
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
// node, then its nodes' scores, then the spread.
func Decide(in *Input) Decision {
	if len(in.Cand) == 0 {
		return Decision{Node: -1, Tier: TierNone, DistanceKm: -1, RTTMs: -1}
	}
	p := in.Params
	if p == nil {
		p = &DefaultParams
	}
	ch := chooser{in: in, p: p, lc: newLadderClient(in.Client, in.Topo)}
	// Pass 1: the best tier holding a usable node, and its highest cost.
	tier, count, maxCost := TierFailOpen, 0, 0.0
	for _, i := range in.Cand {
		if !ch.usable(i) {
			continue
		}
		n := &in.Nodes[i]
		switch t := ch.lc.tierOf(n, tier); {
		case t < tier:
			tier, count, maxCost = t, 1, n.Cost
		case t == tier:
			count++
			maxCost = max(maxCost, n.Cost)
		}
	}
	if count == 0 {
		return failOpen(in.Nodes, in.Cand, in.Key)
	}
	// Pass 2: score that tier's usable nodes.
	ch.s = scorer{c: ch.lc.c, w: &p.Weights, withDist: ch.lc.c != nil && ch.lc.c.HasCoords, maxCost: maxCost, quality: in.Quality}
	d := Decision{Tier: tier, Candidates: count, RTTMs: -1}
	pk := picker{key: in.Key}
	var near nearBest
	for _, i := range in.Cand {
		sc, ok := ch.score(i, tier)
		if !ok {
			continue
		}
		if pk.offer(in.Nodes, i, sc.score) {
			d.Node, d.Score, d.DistanceKm, d.RTTMs = i, sc.score, sc.km, sc.rtt
		}
		if p.Spread > 0 {
			near.add(sc, pk.best*(1-p.Spread)-tieEpsilon)
		}
	}
	d.Tied = pk.tied > 1 || ch.perSubnet
	if p.Spread > 0 && count > 1 {
		if w, spread := ch.spread(tier, pk.best, &near); spread {
			d.Node, d.Score, d.DistanceKm, d.RTTMs, d.Tied = int(w.i), w.score, w.km, w.rtt, true
		}
	}
	d.Order[0], d.NOrder = int32(d.Node), 1
	if p.Answers > 1 {
		ch.order(&d)
	}
	return d
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

// scored is a node of the winning tier with its score.
type scored struct {
	i           int32
	score, km   float64
	rtt, weight float64
}

// chooser holds one decision's state.
type chooser struct {
	in        *Input
	p         *Params
	lc        ladderClient
	s         scorer
	perSubnet bool // a node turned some subnets away: the answer is per subnet
}

// usable reports whether node i may answer this client's subnet: not down,
// below the load cut-off, not behind a lossy link, and not among the
// subnets it turns away.
func (ch *chooser) usable(i int) bool {
	n := &ch.in.Nodes[i]
	p := ch.p
	limit := p.MaxLoad
	if p.ShedHigh > 0 {
		limit = p.ShedHigh
	}
	if n.Down || n.Load >= limit {
		return false
	}
	if q := ch.in.Quality; q != nil && p.MaxLoss > 0 && ch.lc.c != nil {
		if l, ok := q.Link(ch.lc.c.Province, ch.lc.c.ISP, i); ok && l.Loss >= p.MaxLoss {
			return false
		}
	}
	keep := 1 - n.Shed
	if p.ShedHigh > 0 && n.Load > p.ShedLow {
		keep *= (p.ShedHigh - n.Load) / (p.ShedHigh - p.ShedLow)
	}
	if keep >= 1 {
		return true
	}
	ch.perSubnet = true
	return unit(ch.in.Key, n.ID, saltAdmit) < keep
}

// spread picks among tier's nodes within Spread of the best score by
// weighted rendezvous hashing: each takes a share of the subnets in
// proportion to its score, and a change of one node's score moves only
// subnets to or from that node. It reports false when one node is alone
// in the spread.
func (ch *chooser) spread(tier Tier, best float64, near *nearBest) (scored, bool) {
	floor := best*(1-ch.p.Spread) - tieEpsilon
	in := 0
	var win scored
	consider := func(sc scored) {
		if sc.score < floor || sc.score <= 0 {
			return
		}
		in++
		sc.weight = ch.weight(sc)
		if sc.weight > win.weight {
			win = sc
		}
	}
	if near.overflow {
		for _, i := range ch.in.Cand {
			if sc, ok := ch.score(i, tier); ok {
				consider(sc)
			}
		}
	} else {
		for _, sc := range near.list[:near.n] {
			consider(sc)
		}
	}
	return win, in > 1
}

// nearBest keeps, in one pass, the nodes within the spread of the best
// score so far; past its capacity the spread scores the tier again.
type nearBest struct {
	list     [16]scored
	n        int
	overflow bool
}

func (nb *nearBest) add(sc scored, floor float64) {
	if sc.score < floor || nb.overflow {
		return
	}
	k := 0
	for _, o := range nb.list[:nb.n] {
		if o.score >= floor {
			nb.list[k] = o
			k++
		}
	}
	nb.n = k
	if nb.n == len(nb.list) {
		nb.overflow = true
		return
	}
	nb.list[nb.n] = sc
	nb.n++
}

// weight is a node's rendezvous weight for this subnet: larger for a
// higher score, comparable across nodes.
func (ch *chooser) weight(sc scored) float64 {
	return -sc.score / math.Log(unit(ch.in.Key, ch.in.Nodes[sc.i].ID, saltSpread))
}

// order fills d.Order: the winner, the spread by weight, the rest of the
// tier by score, then the usable nodes of the tiers below, best first.
func (ch *chooser) order(d *Decision) {
	n := min(ch.p.Answers, MaxAnswers)
	floor := d.Score*(1-ch.p.Spread) - tieEpsilon
	var tierNodes []scored
	for _, i := range ch.in.Cand {
		if sc, ok := ch.score(i, d.Tier); ok {
			if ch.p.Spread > 0 && sc.score >= floor && sc.score > 0 {
				sc.weight = ch.weight(sc)
			}
			tierNodes = append(tierNodes, sc)
		}
	}
	slices.SortStableFunc(tierNodes, func(a, b scored) int {
		switch {
		case a.weight != b.weight:
			return cmpDesc(a.weight, b.weight)
		default:
			return cmpDesc(a.score, b.score)
		}
	})
	add := func(i int32) {
		if d.NOrder < n && !slices.Contains(d.Order[:d.NOrder], i) {
			d.Order[d.NOrder] = i
			d.NOrder++
		}
	}
	for _, sc := range tierNodes {
		add(sc.i)
	}
	if d.NOrder == n {
		return
	}
	// The tiers below: ordered by tier, then by score with the costs of all.
	var rest []scored
	maxCost := 0.0
	for _, i := range ch.in.Cand {
		maxCost = max(maxCost, ch.in.Nodes[i].Cost)
	}
	s := ch.s
	s.maxCost = maxCost
	var v [NumTerms]float64
	for _, i := range ch.in.Cand {
		nd := &ch.in.Nodes[i]
		if t := ch.lc.tierOf(nd, TierFailOpen); t <= d.Tier || !ch.usable(i) {
			continue
		}
		km := s.values(i, nd, &v)
		rest = append(rest, scored{i: int32(i), score: s.w.dot(&v) - float64(ch.lc.tierOf(nd, TierFailOpen)), km: km})
	}
	slices.SortStableFunc(rest, func(a, b scored) int { return cmpDesc(a.score, b.score) })
	for _, sc := range rest {
		add(sc.i)
	}
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

// failOpen answers with the least-loaded node when no node is usable, Down
// ones included: an answer that may work beats none.
func failOpen(nodes []Node, cand []int, tieKey uint64) Decision {
	pk := picker{key: tieKey}
	for _, i := range cand {
		pk.offer(nodes, i, -nodes[i].Load)
	}
	d := Decision{Node: pk.node, Tier: TierFailOpen, DistanceKm: -1, RTTMs: -1, Tied: pk.tied > 1}
	d.Order[0], d.NOrder = int32(pk.node), 1
	return d
}

// picker keeps the node with the highest value; nodes within tieEpsilon of
// it are broken by their rendezvous hash for the key.
type picker struct {
	key    uint64
	node   int
	best   float64
	hash   uint64 // the winner's hash, once a tie needed it
	hashed bool
	tied   int // nodes at the best value
	seen   bool
}

// offer considers node i with value v and reports whether it is now the
// winner.
func (p *picker) offer(nodes []Node, i int, v float64) bool {
	if !p.seen || v > p.best+tieEpsilon {
		p.win(i, v)
		return true
	}
	if v < p.best-tieEpsilon {
		return false
	}
	return p.tie(nodes, i, v)
}

// win makes node i the sole winner at value v.
func (p *picker) win(i int, v float64) {
	p.node, p.best, p.seen, p.hashed, p.tied = i, v, true, false, 1
}

// tie breaks a tie between the winner and node i by their hashes.
func (p *picker) tie(nodes []Node, i int, v float64) bool {
	p.tied++
	if !p.hashed {
		p.hash, p.hashed = tieHash(p.key, nodes[p.node].ID), true
	}
	if h := tieHash(p.key, nodes[i].ID); h > p.hash {
		p.node, p.best, p.hash = i, v, h
		return true
	}
	return false
}

// Salts keep a subnet's admission and its place in the spread independent.
const (
	saltAdmit  = 0x5bd1e9955bd1e995
	saltSpread = 0x2545f4914f6cdd1d
)

// unit is a uniform number in (0, 1) for a subnet and a node.
func unit(key uint64, id string, salt uint64) float64 {
	return (float64(mix64(key^fnv1a(id)^salt)>>11) + 0.5) / (1 << 53)
}

// tieHash is the rendezvous weight of a node for a client subnet.
func tieHash(key uint64, id string) uint64 { return mix64(key ^ fnv1a(id)) }

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
