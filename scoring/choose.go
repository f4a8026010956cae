package scoring

// tieEpsilon is how close to the best score a node must be to tie with it.
const tieEpsilon = 1e-9

// Choose picks the best node among cand (indices into nodes; the record's
// nodes that have an address of the queried family). tieKey identifies the
// client subnet: equal best scores are broken by rendezvous hashing of
// (tieKey, node ID), so equal nodes share clients stably per subnet.
// A nil topo has no neighbours and no regions; a nil p means DefaultParams.
func Choose(c *Client, nodes []Node, cand []int, topo *Topology, p *Params, tieKey uint64) Decision {
	if len(cand) == 0 {
		return Decision{Node: -1, Tier: TierNone, DistanceKm: -1}
	}
	if p == nil {
		p = &DefaultParams
	}
	lc := newLadderClient(c, topo)
	// Pass 1: the best tier holding a usable node, and its highest cost.
	tier, count, maxCost := TierFailOpen, 0, 0.0
	for _, i := range cand {
		n := &nodes[i]
		if !usable(n, p) {
			continue
		}
		switch t := lc.tierOf(n, tier); {
		case t < tier:
			tier, count, maxCost = t, 1, n.Cost
		case t == tier:
			count++
			maxCost = max(maxCost, n.Cost)
		}
	}
	if count == 0 {
		return failOpen(nodes, cand, tieKey)
	}
	// Pass 2: score that tier's usable nodes.
	s := scorer{c: lc.c, w: &p.Weights, withDist: lc.c != nil && c.HasCoords, maxCost: maxCost}
	d := Decision{Tier: tier, Candidates: count}
	pk := picker{key: tieKey}
	var v [NumTerms]float64
	for _, i := range cand {
		n := &nodes[i]
		if !usable(n, p) || lc.tierOf(n, tier) != tier {
			continue
		}
		km := s.values(n, &v)
		score := s.w.dot(&v)
		if !pk.seen || score > pk.best+tieEpsilon {
			pk.win(i, score)
			d.Score, d.DistanceKm = score, km
		} else if score >= pk.best-tieEpsilon && pk.tie(nodes, i, score) {
			d.Score, d.DistanceKm = score, km
		}
	}
	d.Node, d.Tied = pk.node, pk.tied > 1
	return d
}

func usable(n *Node, p *Params) bool { return !n.Down && n.Load < p.MaxLoad }

// failOpen answers with the least-loaded node when no node is usable, Down
// ones included: an answer that may work beats none.
func failOpen(nodes []Node, cand []int, tieKey uint64) Decision {
	pk := picker{key: tieKey}
	for _, i := range cand {
		pk.offer(nodes, i, -nodes[i].Load)
	}
	return Decision{Node: pk.node, Tier: TierFailOpen, DistanceKm: -1, Tied: pk.tied > 1}
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
