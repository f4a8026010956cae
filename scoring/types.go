// Package scoring narrows a record's nodes along the candidate ladder and
// scores the survivors. It is pure code: no I/O, no clocks, no globals that
// change after init. The ladder is a table of rungs (ladder.go) and the
// score a list of weighted terms (score.go).
package scoring

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
	Cost                              float64 // >= 0
	Load                              float64 // 0..1, live or static
	Down                              bool    // health probes removed it
}

// Params are the tunables of a decision.
type Params struct {
	Weights Weights
	MaxLoad float64 // nodes with Load >= MaxLoad are not usable
}

// DefaultParams weigh nearness most, then spare capacity, then cost.
var DefaultParams = Params{Weights: Weights{0.5, 0.3, 0.2}, MaxLoad: 0.8}

// Decision is the outcome of Choose.
type Decision struct {
	Node       int // index into the nodes slice; -1 when there is none
	Tier       Tier
	Candidates int     // usable nodes in the winning tier
	DistanceKm float64 // -1 when distance played no part
	Score      float64
	// Tied is true when the winner shared the best score with another node
	// and the per-subnet tie key picked it: the answer then depends on the
	// client subnet used as TieKey.
	Tied bool
}
