package scoring

// NodeTrace is what a decision saw of one candidate node.
type NodeTrace struct {
	Node   int
	Tier   Tier   // the best rung the node is on for this client
	Usable bool   // for this client's subnet
	Reason string // why not: down, overloaded, lossy, errors, shed
	Terms  [NumTerms]float64
	Score  float64 // with the costs of its own tier, as its tier would score it
	// DistanceKm is -1 when distance plays no part; RTTMs is -1 without a
	// quality row.
	DistanceKm, RTTMs float64
}

// Reasons a node is not usable.
const (
	ReasonDown       = "down"
	ReasonOverloaded = "overloaded"
	ReasonLossy      = "lossy"
	ReasonErrors     = "errors" // a feed cell's 5xx ratio at or above max_error_rate
	ReasonShed       = "shed"
)

// Trace traces every candidate of in: its tier, whether it was usable and
// why not, and its score's terms.
func Trace(in *Input) []NodeTrace {
	p := in.Params
	if p == nil {
		p = &DefaultParams
	}
	ch := chooser{in: in, p: p, lc: newLadderClient(in.Client, in.Topo, p.LadderFor(in.V6))}
	traces := make([]NodeTrace, 0, len(in.Cand))
	maxCost := map[Tier]float64{}
	for _, i := range in.Cand {
		t := NodeTrace{Node: i, Tier: ch.lc.tierOf(&in.Nodes[i], TierFailOpen), RTTMs: -1, DistanceKm: -1}
		t.Reason = ch.why(i)
		t.Usable = t.Reason == ""
		if t.Usable {
			maxCost[t.Tier] = max(maxCost[t.Tier], in.Nodes[i].Cost)
		}
		traces = append(traces, t)
	}
	for k := range traces {
		t := &traces[k]
		s := newScorer(ch.lc.c, &p.Weights, maxCost[t.Tier], in.Quality)
		t.DistanceKm = s.values(t.Node, &in.Nodes[t.Node], &t.Terms)
		t.Score, t.RTTMs = s.w.dot(&t.Terms), s.rtt
	}
	return traces
}
