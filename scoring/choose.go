package scoring

import "math"

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
	var lc ladderClient
	if c != nil && c.Country != "" {
		lc = ladderClient{c: c}
		if c.Province != "" {
			lc.neighbors = topo.neighborsOf(c.Country, c.Province)
			lc.region = topo.Region(c.Country, c.Province)
		}
	}

	// Pass 1: the best tier holding a usable node, and its highest cost.
	tier, count, maxCost := TierFailOpen, 0, 0.0
	for _, i := range cand {
		n := &nodes[i]
		if !usable(n, p) {
			continue
		}
		switch t := lc.tierOf(n, topo, tier); {
		case t < tier:
			tier, count, maxCost = t, 1, n.Cost
		case t == tier:
			count++
			maxCost = math.Max(maxCost, n.Cost)
		}
	}
	if count == 0 {
		return failOpen(nodes, cand, tieKey)
	}

	// Pass 2: score that tier's usable nodes.
	withDist := lc.c != nil && c.HasCoords
	w := p.Weights
	d := Decision{Node: -1, Tier: tier, Candidates: count, DistanceKm: -1}
	var winHash uint64
	hashed, tied := false, 0
	for _, i := range cand {
		n := &nodes[i]
		if !usable(n, p) || lc.tierOf(n, topo, tier) != tier {
			continue
		}
		km := -1.0
		s := w.Load * (1 - n.Load)
		if maxCost > 0 {
			s += w.Cost * (1 - n.Cost/maxCost)
		} else {
			s += w.Cost
		}
		if withDist {
			km = Haversine(c.Lat, c.Lon, n.Lat, n.Lon)
			s += w.Distance / (1 + km/100)
		}
		switch {
		case d.Node < 0 || s > d.Score+tieEpsilon:
			d.Node, d.Score, d.DistanceKm = i, s, km
			hashed, tied = false, 1
		case s >= d.Score-tieEpsilon:
			tied++
			if !hashed {
				winHash, hashed = tieHash(tieKey, nodes[d.Node].ID), true
			}
			if h := tieHash(tieKey, n.ID); h > winHash {
				d.Node, d.Score, d.DistanceKm, winHash = i, s, km, h
			}
		}
	}
	d.Tied = tied > 1
	return d
}

// ladderClient caches what the ladder needs of the client, looked up once
// per decision.
type ladderClient struct {
	c         *Client // nil when the client has no location
	neighbors []string
	region    string
}

// tierOf returns the best ladder tier node n belongs to for this client, or
// some tier worse than bound once it knows the node can't reach bound: the
// neighbour scan and the region map lookup are skipped when they can't matter.
func (lc *ladderClient) tierOf(n *Node, topo *Topology, bound Tier) Tier {
	c := lc.c
	if c == nil {
		return TierAll
	}
	if n.Country != c.Country {
		if c.Continent != "" && n.Continent == c.Continent {
			return TierContinent
		}
		return TierAll
	}
	isp := c.ISP != "" && n.ISP == c.ISP
	if c.Province != "" && n.Province == c.Province {
		if isp {
			return TierProvinceISP
		}
		return TierProvince
	}
	if bound < TierNeighborISP {
		return TierCountry
	}
	if contains(lc.neighbors, n.Province) {
		if isp {
			return TierNeighborISP
		}
		return TierNeighbor
	}
	if bound >= TierRegion && lc.region != "" && topo.Region(n.Country, n.Province) == lc.region {
		return TierRegion
	}
	return TierCountry
}

func usable(n *Node, p *Params) bool { return !n.Down && n.Load < p.MaxLoad }

// failOpen answers with the least-loaded node when no node is usable, Down
// ones included: an answer that may work beats none.
func failOpen(nodes []Node, cand []int, tieKey uint64) Decision {
	d := Decision{Node: -1, Tier: TierFailOpen, DistanceKm: -1}
	load := 0.0
	var winHash uint64
	hashed, tied := false, 0
	for _, i := range cand {
		n := &nodes[i]
		switch {
		case d.Node < 0 || n.Load < load-tieEpsilon:
			d.Node, load = i, n.Load
			hashed, tied = false, 1
		case n.Load <= load+tieEpsilon:
			tied++
			if !hashed {
				winHash, hashed = tieHash(tieKey, nodes[d.Node].ID), true
			}
			if h := tieHash(tieKey, n.ID); h > winHash {
				d.Node, load, winHash = i, n.Load, h
			}
		}
	}
	d.Tied = tied > 1
	return d
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

// Haversine returns the great-circle distance in km between two points
// given in degrees (R = 6371 km).
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	const r, rad = 6371.0, math.Pi / 180
	dphi := (lat2 - lat1) * rad
	dlmb := (lon2 - lon1) * rad
	a := math.Sin(dphi/2)*math.Sin(dphi/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlmb/2)*math.Sin(dlmb/2)
	return 2 * r * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
}
