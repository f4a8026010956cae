package scoring

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

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
	TierFallback                // no usable node: the record's fallback CNAME
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

// Ladder is an order of the ladder's rungs: a node's tier is the first
// rung it matches, and the first tier holding a usable node wins. The
// default is the order above; ParseLadder makes others. Immutable.
type Ladder struct {
	rungs []rung
	// rank is a tier's place, from 1; the tiers not on it come after
	// every rung, and fail_open after them.
	rank [TierOverride + 1]uint8
	// tierAt is the ladder read once: the first rung for a node at a
	// level, on the client's carrier or not.
	tierAt [levelAny + 1][2]Tier
	// reach is, by rank, the widest level the rungs up to it ask about.
	reach [len(ladder) + 3]level
}

// DefaultLadder is the ladder's order above.
var DefaultLadder = newLadder(ladder[:])

func init() {
	for i, r := range ladder {
		if r.tier != Tier(i+1) {
			panic("scoring: the ladder is out of order at " + r.name)
		}
	}
}

func newLadder(rungs []rung) *Ladder {
	l := &Ladder{rungs: rungs}
	for t := range l.rank {
		l.rank[t] = uint8(len(rungs) + 1)
	}
	l.rank[TierFailOpen] = uint8(len(rungs) + 2)
	for k, r := range rungs {
		l.rank[r.tier] = uint8(k + 1)
		l.reach[k+1] = max(l.reach[k], r.level)
	}
	l.reach[len(rungs)+1], l.reach[len(rungs)+2] = levelAny, levelAny
	for lv := range l.tierAt {
		for isp := range l.tierAt[lv] {
			l.tierAt[lv][isp] = TierFailOpen
			for _, r := range rungs {
				if level(lv) <= r.level && (isp == 1 || !r.isp) {
					l.tierAt[lv][isp] = r.tier
					break
				}
			}
		}
	}
	return l
}

// ParseLadder reads an order of tiers by their labels (province_isp,
// province, neighbor_isp, neighbor, region, country, continent, all): each
// at most once, all last. A rung takes the nodes within its level (a
// province's nodes are within its neighbour level). A located client's
// nodes on no listed tier are reached only by failing open; a client
// without a location is on all whether listed or not.
func ParseLadder(names []string) (*Ladder, error) {
	if len(names) == 0 {
		return nil, errors.New("ladder: no tier")
	}
	var rungs []rung
	for k, name := range names {
		i := slices.IndexFunc(ladder[:], func(r rung) bool { return r.name == name })
		switch {
		case i < 0:
			return nil, fmt.Errorf("ladder: unknown tier %q, want one of %s", name, strings.Join(ladderNames(), " "))
		case slices.ContainsFunc(rungs, func(r rung) bool { return r.name == name }):
			return nil, fmt.Errorf("ladder: tier %q listed twice", name)
		case ladder[i].tier == TierAll && k != len(names)-1:
			return nil, fmt.Errorf("ladder: tier %q must be last", name)
		}
		rungs = append(rungs, ladder[i])
	}
	return newLadder(rungs), nil
}

func ladderNames() []string {
	names := make([]string, len(ladder))
	for i, r := range ladder {
		names[i] = r.name
	}
	return names
}

// Tiers lists the ladder's tiers in order.
func (l *Ladder) Tiers() []Tier {
	out := make([]Tier, len(l.rungs))
	for k, r := range l.rungs {
		out[k] = r.tier
	}
	return out
}

// String is the order as ParseLadder reads it.
func (l *Ladder) String() string {
	names := make([]string, len(l.rungs))
	for k, r := range l.rungs {
		names[k] = r.name
	}
	return strings.Join(names, " ")
}

// Missing lists the tiers the ladder leaves out, in the default order: a
// located client whose nodes are only on them fails open.
func (l *Ladder) Missing() []string {
	var out []string
	for _, r := range ladder {
		if l.rank[r.tier] > uint8(len(l.rungs)) {
			out = append(out, r.name)
		}
	}
	return out
}

// Better reports whether tier a comes before b on this ladder; fail_open
// comes after every rung.
func (l *Ladder) Better(a, b Tier) bool { return l.rank[a] < l.rank[b] }

func (t Tier) String() string {
	switch {
	case t == TierNone:
		return "none"
	case t == TierFailOpen:
		return "fail_open"
	case t == TierFallback:
		return "fallback"
	case t == TierOverride:
		return "override"
	case int(t) <= len(ladder):
		return ladder[t-1].name
	}
	return "unknown"
}

// Tiers lists every tier's label, for metrics and tools, in the default
// order.
func Tiers() []string {
	names := make([]string, 0, len(ladder)+1)
	for _, r := range ladder {
		names = append(names, r.name)
	}
	return append(names, TierFailOpen.String(), TierFallback.String(), TierOverride.String())
}

// ladderClient holds what the ladder needs of the client, looked up once
// per decision.
type ladderClient struct {
	l         *Ladder
	c         *Client // nil when the client has no location
	topo      *Topology
	neighbors []string
	region    string
}

func newLadderClient(c *Client, topo *Topology, l *Ladder) ladderClient {
	if c == nil || c.Country == "" {
		return ladderClient{l: l, topo: topo}
	}
	lc := ladderClient{l: l, c: c, topo: topo}
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
	worst := lc.l.reach[lc.l.rank[bound]]
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
	return lc.l.tierAt[lv][isp]
}

// bestOf is the better of n's tier and t (TierNone: none yet).
func (lc *ladderClient) bestOf(n *Node, t Tier) Tier {
	if nt := lc.tierOf(n, TierFailOpen); t == TierNone || lc.l.Better(nt, t) {
		return nt
	}
	return t
}
