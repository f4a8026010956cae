package scoring

import "slices"

// Tier is the ladder rung that produced the candidates.
type Tier uint8

// The tiers, best first. Their values are their places on the ladder
// below, which is the one list to change to add a tier.
const (
	TierNone        Tier = iota // no node at all
	TierProvinceISP             // same province and carrier
	TierProvince                // same province
	TierNeighborISP             // neighbouring province and same carrier
	TierNeighbor                // neighbouring province
	TierRegion                  // same region (华北, 华东, ...)
	TierCountry                 // same country
	TierContinent               // same continent
	TierAll                     // every node of the record
	TierFailOpen                // no usable node: least-loaded node
	TierOverride                // an override or pin named the nodes
)

// level is how close a node is to the client, closest first.
type level uint8

const (
	levelProvince level = iota
	levelNeighbor
	levelRegion
	levelCountry
	levelContinent
	levelAny
)

// rung is one step of the ladder: the nodes within a level of the client,
// and, when isp is set, on the client's carrier.
type rung struct {
	tier  Tier
	name  string // the tier's label in metrics and metadata
	level level
	isp   bool
}

// ladder is tried top down: a node's tier is the first rung it matches,
// and the best tier with a usable node wins.
var ladder = [...]rung{
	{TierProvinceISP, "province_isp", levelProvince, true},
	{TierProvince, "province", levelProvince, false},
	{TierNeighborISP, "neighbor_isp", levelNeighbor, true},
	{TierNeighbor, "neighbor", levelNeighbor, false},
	{TierRegion, "region", levelRegion, false},
	{TierCountry, "country", levelCountry, false},
	{TierContinent, "continent", levelContinent, false},
	{TierAll, "all", levelAny, false},
}

// tierAt is the ladder read once: the first rung for a node at a level,
// on the client's carrier or not.
var tierAt [levelAny + 1][2]Tier

func init() {
	for i, r := range ladder {
		if r.tier != Tier(i+1) {
			panic("scoring: the ladder is out of order at " + r.name)
		}
	}
	for lv := range tierAt {
		for isp := range tierAt[lv] {
			tierAt[lv][isp] = TierFailOpen
			for _, r := range ladder {
				if level(lv) <= r.level && (isp == 1 || !r.isp) {
					tierAt[lv][isp] = r.tier
					break
				}
			}
		}
	}
}

func (t Tier) String() string {
	switch {
	case t == TierNone:
		return "none"
	case t == TierFailOpen:
		return "fail_open"
	case t == TierOverride:
		return "override"
	case int(t) <= len(ladder):
		return ladder[t-1].name
	}
	return "unknown"
}

// Tiers lists every tier's label, for metrics and tools.
func Tiers() []string {
	names := make([]string, 0, len(ladder)+1)
	for _, r := range ladder {
		names = append(names, r.name)
	}
	return append(names, TierFailOpen.String(), TierOverride.String())
}

// ladderClient holds what the ladder needs of the client, looked up once
// per decision.
type ladderClient struct {
	c         *Client // nil when the client has no location
	topo      *Topology
	neighbors []string
	region    string
}

func newLadderClient(c *Client, topo *Topology) ladderClient {
	if c == nil || c.Country == "" {
		return ladderClient{topo: topo}
	}
	lc := ladderClient{c: c, topo: topo}
	if c.Province != "" {
		lc.neighbors = topo.neighborsOf(c.Country, c.Province)
		lc.region = topo.Region(c.Country, c.Province)
	}
	return lc
}

// tierOf returns node n's tier for this client when it is bound or better,
// and some tier worse than bound otherwise: the levels no rung up to bound
// asks about (a neighbour scan, a region lookup) are not computed.
func (lc *ladderClient) tierOf(n *Node, bound Tier) Tier {
	c := lc.c
	if c == nil {
		return TierAll
	}
	isp := 0
	if c.ISP != "" && n.ISP == c.ISP {
		isp = 1
	}
	worst := levelAny
	if int(bound) <= len(ladder) {
		worst = ladder[bound-1].level
	}
	var lv level
	switch {
	case n.Country != c.Country:
		lv = levelAny
		if c.Continent != "" && n.Continent == c.Continent {
			lv = levelContinent
		}
	case c.Province != "" && n.Province == c.Province:
		lv = levelProvince
	case worst < levelNeighbor:
		return TierFailOpen
	case slices.Contains(lc.neighbors, n.Province):
		lv = levelNeighbor
	case worst < levelRegion:
		return TierFailOpen
	case lc.region != "" && lc.topo.Region(n.Country, n.Province) == lc.region:
		lv = levelRegion
	default:
		lv = levelCountry
	}
	return tierAt[lv][isp]
}
