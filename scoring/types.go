// Package scoring narrows a record's nodes along the candidate ladder and
// scores the survivors. It is pure code: no I/O, no clocks, no globals that
// change after init. The ladder is a table of rungs (ladder.go) and the
// score a list of weighted terms (score.go).
package scoring

import "fmt"

// Client is the located client. All strings are normalized by the caller:
// Country and Continent upper case, Province an ISO 3166-2 subdivision code
// without country prefix, ISP lower case.
type Client struct {
	Country, Continent, Province, ISP string
	HasCoords                         bool // Lat/Lon are meaningful (province or city level)
	Lat, Lon                          float64
	// ProvinceLevel is set when Lat/Lon are only the province's capital:
	// every node in the client's province is then as near as can be told.
	ProvinceLevel bool
}

// Node is one entry of the node table as the scorer sees it.
type Node struct {
	ID                                string
	Country, Continent, Province, ISP string // normalized like Client
	Lat, Lon                          float64
	NoCoords                          bool    // no Lat/Lon: distance plays no part
	Cost                              float64 // >= 0
	Load                              float64 // 0..1, live or static
	Down                              bool    // health probes removed it
	// Shed is the share of client subnets the node turns away, 0..1: a
	// node coming back from down ramps it from 1 to 0 over the cooldown.
	// Which subnets is stable: as Shed falls, subnets only come back.
	Shed float64
	// Weight is the node's capacity: it multiplies its share of the
	// subnets it shares with others (weighted rendezvous). 0 reads as 1.
	Weight float64
	// Fails and Flaps are the failed probes and the up/down transitions
	// of the health window: the stability term's input.
	Fails, Flaps int
}

// Priority is a record's class when a node sheds load: low-priority names
// leave a node between the watermarks first, high-priority ones last.
type Priority uint8

// The priorities; the zero value is normal.
const (
	PriorityNormal Priority = iota
	PriorityHigh
	PriorityLow
)

var priorityNames = [...]string{PriorityNormal: "normal", PriorityHigh: "high", PriorityLow: "low"}

func (p Priority) String() string {
	if int(p) < len(priorityNames) {
		return priorityNames[p]
	}
	return "unknown"
}

// ParsePriority reads "high", "normal" or "low"; "" is normal.
func ParsePriority(s string) (Priority, error) {
	if s == "" {
		return PriorityNormal, nil
	}
	for p, name := range priorityNames {
		if s == name {
			return Priority(p), nil
		}
	}
	return PriorityNormal, fmt.Errorf("%q is not a priority: high, normal or low", s)
}

// Params are the tunables of a decision.
type Params struct {
	Weights Weights
	MaxLoad float64 // nodes with Load >= MaxLoad are not usable
	// Spread: the usable nodes of the winning tier whose score is within
	// Spread (a fraction of the best score) share the clients in proportion
	// to their scores; 0: the best wins.
	Spread float64
	// ShedLow and ShedHigh: between them a node turns away a share of its
	// subnets that grows linearly to all; at ShedHigh it is not usable
	// (ShedHigh then stands for MaxLoad). 0, 0: off.
	ShedLow, ShedHigh float64
	// MaxLoss: a quality row with this loss or more makes the node unusable
	// for that row's clients.
	MaxLoss float64
	// MaxErrorRate: a fresh feed cell with this 5xx ratio or more makes
	// the node unusable for that cell's clients; 0: off.
	MaxErrorRate float64
	// Answers is how many nodes the decision orders, 1..MaxAnswers.
	Answers int
	// Ladder and Ladder6 order the tiers for A and AAAA; nil: the
	// default, and for Ladder6 Ladder's.
	Ladder, Ladder6 *Ladder
}

// LadderFor is the ladder of a family: AAAA's when v6.
func (p *Params) LadderFor(v6 bool) *Ladder {
	switch {
	case v6 && p.Ladder6 != nil:
		return p.Ladder6
	case p.Ladder != nil:
		return p.Ladder
	}
	return DefaultLadder
}

// MaxAnswers bounds Params.Answers.
const MaxAnswers = 8

// DefaultParams weigh nearness most, then spare capacity, then cost, and
// spread the clients over nodes within 10% of the best.
var DefaultParams = Params{Weights: Weights{0.5, 0.3, 0.2}, MaxLoad: 0.8, Spread: 0.1, MaxLoss: 0.2, MaxErrorRate: 0.2, Answers: 1}

// Decision is the outcome of Choose.
type Decision struct {
	Node       int // index into the nodes slice; -1 when there is none
	Tier       Tier
	Candidates int     // usable nodes in the winning tier
	DistanceKm float64 // -1 when distance played no part
	Score      float64
	// Tied is true when the client's subnet picked the winner among others
	// (a tie, the spread, or a node turning some subnets away): the answer
	// then depends on the subnet used as the key.
	Tied bool
	// Ramping and Shedding: a node on the winner's tier or a better one
	// is ramping back from down (or a drain), or shedding load between
	// the watermarks: the subnet may move to or from it soon.
	Ramping, Shedding bool
	// RTTMs is the winner's quality row's round trip, -1 without one.
	RTTMs float64
	// Order lists the first Params.Answers nodes, the winner first: the
	// spread's order, then the rest of the tier, then the tiers below.
	Order  [MaxAnswers]int32
	NOrder int
}
