package scoring

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// twelve is a 12-node telecom table without a node in the north-west or
// Tibet: their clients reach the tier country.
func twelve() ([]Node, []int) {
	at := []struct {
		prov     string
		lat, lon float64
	}{{"BJ", 39.9, 116.4}, {"SH", 31.23, 121.47}, {"GD", 23.13, 113.26}, {"SC", 30.66, 104.07},
		{"HB", 30.59, 114.31}, {"ZJ", 30.27, 120.16}, {"JS", 32.06, 118.8}, {"SD", 36.67, 117.0},
		{"FJ", 26.07, 119.3}, {"HA", 34.76, 113.65}, {"LN", 41.8, 123.43}, {"HN", 28.23, 112.94}}
	nodes := make([]Node, len(at))
	cand := make([]int, len(at))
	for i, a := range at {
		nodes[i] = Node{ID: a.prov + "-telecom", Country: "CN", Continent: "AS", Province: a.prov, ISP: "telecom", Lat: a.lat, Lon: a.lon}
		cand[i] = i
	}
	return nodes, cand
}

// remote are clients of provinces without a node, at random places of
// their province.
func remote(r *rand.Rand) Client {
	box := []struct {
		prov                   string
		lat0, lat1, lon0, lon1 float64
	}{{"XJ", 36, 47, 76, 95}, {"XZ", 28, 34, 80, 97}, {"QH", 32, 39, 90, 102}, {"GS", 33, 42, 93, 107},
		{"NX", 35.5, 39, 105, 107}, {"NM", 38, 50, 100, 125}, {"YN", 22, 28, 98, 105}, {"HI", 18.2, 20, 108.6, 111}}
	b := box[r.IntN(len(box))]
	return Client{Country: "CN", Continent: "AS", Province: b.prov, ISP: "telecom", HasCoords: true,
		Lat: b.lat0 + r.Float64()*(b.lat1-b.lat0), Lon: b.lon0 + r.Float64()*(b.lon1-b.lon0)}
}

// The spread shares clients among near-equals in distance only: over
// 20,000 subnets of provinces with no node, the default spread never sends
// a subnet more than max(100 km, 10%) farther than spread 0 does, whatever
// the loads and costs.
func TestSpreadNeverTradesDistance(t *testing.T) {
	nodes, cand := twelve()
	r := rand.New(rand.NewPCG(3, 4))
	none := DefaultParams
	none.Spread = 0
	var sum, sum0 float64
	shared, n := 0, 0
	for round := range 20 {
		for i := range nodes {
			nodes[i].Load = float64(r.IntN(7)) / 10
			nodes[i].Cost = float64(r.IntN(4)) / 10
		}
		for k := range 1000 {
			c := remote(r)
			key := subnetKey(round*1000 + k)
			d := Choose(&c, nodes, cand, DefaultTopology(), &DefaultParams, key)
			d0 := Choose(&c, nodes, cand, DefaultTopology(), &none, key)
			if d.DistanceKm > d0.DistanceKm+max(100, 0.1*d0.DistanceKm)+1e-6 {
				t.Fatalf("%s at %.1f,%.1f: spread sends %s at %.0f km, spread 0 %s at %.0f km",
					c.Province, c.Lat, c.Lon, nodes[d.Node].ID, d.DistanceKm, nodes[d0.Node].ID, d0.DistanceKm)
			}
			if d.Node != d0.Node {
				shared++
			}
			sum, sum0, n = sum+d.DistanceKm, sum0+d0.DistanceKm, n+1
		}
	}
	if shared == 0 {
		t.Error("The spread never moved a subnet: it does not spread")
	}
	t.Logf("Mean %.0f km with the spread, %.0f km with spread 0; %d of %d subnets on another near-equal", sum/float64(n), sum0/float64(n), shared, n)
}

// The Xinjiang case: Chengdu at 2,000 km and Guangzhou at 3,300 km score
// within 10% of each other, and Guangzhou takes none of the subnets.
func TestSpreadXinjiangStaysWest(t *testing.T) {
	nodes, cand := twelve()
	urumqi := Client{Country: "CN", Continent: "AS", Province: "XJ", ISP: "telecom", HasCoords: true, Lat: 43.8, Lon: 87.6}
	for k := range 5000 {
		d := Choose(&urumqi, nodes, cand, DefaultTopology(), &DefaultParams, subnetKey(k))
		if d.DistanceKm > 2200 {
			t.Fatalf("Subnet %d went to %s at %.0f km", k, nodes[d.Node].ID, d.DistanceKm)
		}
	}
}

func weighted(w ...float64) []Node {
	nodes := zjTelecom(0.3, 0.3, 0.3)
	for i, x := range w {
		nodes[i].Weight = x
	}
	return nodes
}

// Weights 1, 1, 2 take 25%, 25% and 50% of 10,000 subnets, with the
// spread and with spread 0 (a tie); changing one weight moves subnets only
// to or from that node.
func TestCapacityWeights(t *testing.T) {
	const n = 10000
	tie := DefaultParams
	tie.Spread = 0
	for _, p := range []*Params{&DefaultParams, &tie} {
		got, was := shares(weighted(1, 1, 2), p, n)
		for id, want := range map[string]float64{"hz-1": 0.25, "hz-2": 0.25, "hz-3": 0.5} {
			if f := float64(got[id]) / n; math.Abs(f-want) > 0.03 {
				t.Errorf("Spread %v: %s took %.1f%%, want %.0f%% ± 3%%", p.Spread, id, 100*f, 100*want)
			}
		}
		for _, change := range []struct {
			w  []float64
			id string
		}{{[]float64{1, 1, 3}, "hz-3"}, {[]float64{1, 0.5, 2}, "hz-2"}, {[]float64{1, 1, 1}, "hz-3"}} {
			_, is := shares(weighted(change.w...), p, n)
			for i := range n {
				if was[i] != is[i] && was[i] != change.id && is[i] != change.id {
					t.Fatalf("Spread %v, weights %v: subnet %d moved %s to %s, not to or from %s", p.Spread, change.w, i, was[i], is[i], change.id)
				}
			}
		}
	}
	// Unset weights read as 1: the same subnets as weight 1 everywhere.
	_, unset := shares(weighted(), &tie, 2000)
	_, ones := shares(weighted(1, 1, 1), &tie, 2000)
	for i := range unset {
		if unset[i] != ones[i] {
			t.Fatalf("Subnet %d: %s unweighted, %s at weight 1", i, unset[i], ones[i])
		}
	}
}

// Between the watermarks a low-priority name sheds twice the normal share
// and a high-priority one half of it, each keeping a subset of the subnets
// the class above keeps; at the high watermark every class leaves.
func TestShedPriority(t *testing.T) {
	p := DefaultParams
	p.ShedLow, p.ShedHigh = 0.6, 0.9
	const n = 6000
	for _, load := range []float64{0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9} {
		nodes := zjTelecom(load)
		normal := (load - 0.6) / 0.3
		kept := map[Priority]map[int]bool{}
		for _, pr := range []Priority{PriorityHigh, PriorityNormal, PriorityLow} {
			kept[pr] = map[int]bool{}
			for i := range n {
				d := Decide(&Input{Client: &hzTelecom, Nodes: nodes, Cand: []int{0, 3}, Topo: DefaultTopology(), Params: &p, Key: subnetKey(i), Priority: pr})
				if d.Node == 0 {
					kept[pr][i] = true
				}
			}
			want := map[Priority]float64{PriorityHigh: 1 - normal/2, PriorityNormal: 1 - normal, PriorityLow: max(0, 1-2*normal)}[pr]
			if load >= 0.9 {
				want = 0
			}
			if f := float64(len(kept[pr])) / n; math.Abs(f-want) > 0.03 {
				t.Errorf("Load %.2f, %s: kept %.1f%%, want %.0f%%", load, pr, 100*f, 100*want)
			}
		}
		for i := range kept[PriorityLow] {
			if !kept[PriorityNormal][i] {
				t.Fatalf("Load %.2f: subnet %d kept for low but not for normal", load, i)
			}
		}
		for i := range kept[PriorityNormal] {
			if !kept[PriorityHigh][i] {
				t.Fatalf("Load %.2f: subnet %d kept for normal but not for high", load, i)
			}
		}
	}
}

func TestParsePriority(t *testing.T) {
	for s, want := range map[string]Priority{"": PriorityNormal, "normal": PriorityNormal, "high": PriorityHigh, "low": PriorityLow} {
		if got, err := ParsePriority(s); err != nil || got != want || (s != "" && got.String() != s) {
			t.Errorf("ParsePriority(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParsePriority("urgent"); err == nil || !strings.Contains(err.Error(), `"urgent"`) {
		t.Errorf("Got %v, want an error naming urgent", err)
	}
}

// The stability term prefers the steady node among near-equals; at weight
// 0 (a Corefile's four weights) the history changes no decision.
func TestStabilityTerm(t *testing.T) {
	nodes := zjTelecom(0.3, 0.3, 0.3)
	nodes[0].Fails = 4
	nodes[1].Fails, nodes[1].Flaps = 1, 1
	steady := DefaultParams
	steady.Spread = 0
	steady.Weights = Weights{0.5, 0.3, 0.2, 0, 0.2}
	old := DefaultParams
	old.Spread = 0
	calm := zjTelecom(0.3, 0.3, 0.3)
	for k := range 3000 {
		key := subnetKey(k)
		if d := Choose(&hzTelecom, nodes, []int{0, 1, 2, 3}, DefaultTopology(), &steady, key); nodes[d.Node].ID != "hz-3" {
			t.Fatalf("Subnet %d went to %s, want the steady hz-3", k, nodes[d.Node].ID)
		}
		for _, p := range []*Params{&old, &DefaultParams} {
			d := Choose(&hzTelecom, nodes, []int{0, 1, 2, 3}, DefaultTopology(), p, key)
			c := Choose(&hzTelecom, calm, []int{0, 1, 2, 3}, DefaultTopology(), p, key)
			if d != c {
				t.Fatalf("Subnet %d: weight 0 and a history decide %+v, without history %+v", k, d, c)
			}
		}
	}
	// Spread: the flapping node keeps a smaller share, not none.
	steady.Spread = 0.3
	got := map[string]int{}
	for k := range 6000 {
		got[nodes[Choose(&hzTelecom, nodes, []int{0, 1, 2}, DefaultTopology(), &steady, subnetKey(k)).Node].ID]++
	}
	if !(got["hz-3"] > got["hz-2"] && got["hz-2"] > got["hz-1"]) {
		t.Errorf("Shares %v: want the steadier nodes to take more", got)
	}
	t.Logf("Shares with stability 0.2 and spread 0.3: %v", got)
}

func mustLadder(t *testing.T, s string) *Ladder {
	t.Helper()
	l, err := ParseLadder(strings.Fields(s))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The default ladder is today's order, and a parsed one in that order
// decides the same; a bad list names the tier.
func TestParseLadder(t *testing.T) {
	if got := DefaultLadder.String(); got != "province_isp province neighbor_isp neighbor region country continent all" {
		t.Errorf("Default ladder %q", got)
	}
	l := mustLadder(t, "province_isp neighbor_isp province neighbor region country continent all")
	if !l.Better(TierNeighborISP, TierProvince) || l.Better(TierProvince, TierNeighborISP) || !l.Better(TierAll, TierFailOpen) {
		t.Errorf("Order %v: neighbor_isp must come before province", l.Tiers())
	}
	for _, tc := range []struct{ in, want string }{
		{"", "ladder: no tier"},
		{"province_isp provinces all", `unknown tier "provinces"`},
		{"province province_isp province", `tier "province" listed twice`},
		{"all province", `tier "all" must be last`},
		{"fail_open", `unknown tier "fail_open"`},
	} {
		if _, err := ParseLadder(strings.Fields(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLadder(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	same := DefaultParams
	same.Ladder = mustLadder(t, DefaultLadder.String())
	r := rand.New(rand.NewPCG(5, 6))
	for k := range 3000 {
		c := remote(r)
		if k%2 == 0 {
			c = hzEdu
		}
		cand := allIDs()
		if a, b := Choose(&c, fixture, cand, DefaultTopology(), &DefaultParams, uint64(k)), Choose(&c, fixture, cand, DefaultTopology(), &same, uint64(k)); a != b {
			t.Fatalf("%+v: default %+v, parsed default %+v", c, a, b)
		}
	}
}

// Same carrier in a neighbouring province before another carrier in the
// client's own, for AAAA only; a ladder without all fails open abroad.
func TestLadderOrder(t *testing.T) {
	p := DefaultParams
	p.Ladder6 = mustLadder(t, "province_isp neighbor_isp province neighbor region country continent all")
	cand := ids("hz-unicom", "sh-telecom", "tokyo")
	in := Input{Client: &hzTelecom, Nodes: fixture, Cand: cand, Topo: DefaultTopology(), Params: &p}
	if d := Decide(&in); fixture[d.Node].ID != "hz-unicom" || d.Tier != TierProvince {
		t.Errorf("A: %s (%s), want hz-unicom on the default ladder", fixture[d.Node].ID, d.Tier)
	}
	in.V6 = true
	if d := Decide(&in); fixture[d.Node].ID != "sh-telecom" || d.Tier != TierNeighborISP {
		t.Errorf("AAAA: %s (%s), want sh-telecom from neighbor_isp", fixture[d.Node].ID, d.Tier)
	}
	// The trace reads the same ladder.
	for _, tr := range Trace(&in) {
		if fixture[tr.Node].ID == "hz-unicom" && tr.Tier != TierProvince {
			t.Errorf("Trace: hz-unicom on %s", tr.Tier)
		}
	}
	p.Ladder = mustLadder(t, "province_isp province neighbor_isp neighbor region country")
	p.Answers = 3
	abroad := Client{Country: "US", Continent: "NA", HasCoords: true, Lat: 37, Lon: -122}
	in = Input{Client: &abroad, Nodes: fixture, Cand: ids("tokyo", "hz-telecom"), Topo: DefaultTopology(), Params: &p}
	if d := Decide(&in); d.Tier != TierFailOpen {
		t.Errorf("Abroad without all: tier %s, want fail_open", d.Tier)
	}
	in.Client = &Client{}
	if d := Decide(&in); d.Tier != TierAll || d.Node < 0 {
		t.Errorf("Location-free without all: %+v, want the tier all", d)
	}
	in.Client = &hzMobile
	in.Cand = ids("tokyo", "sh-telecom", "hz-telecom")
	d := Decide(&in)
	if fixture[d.Node].ID != "hz-telecom" || d.NOrder != 2 {
		t.Errorf("Got %s and %d answers, want hz-telecom then sh-telecom; tokyo is on no rung", fixture[d.Node].ID, d.NOrder)
	}
}
