package scoring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fixture: indices are referenced by name through idx.
var fixture = []Node{
	{ID: "hz-telecom", Country: "CN", Continent: "AS", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16, Load: 0.1},
	{ID: "hz-unicom", Country: "CN", Continent: "AS", Province: "ZJ", ISP: "unicom", Lat: 30.27, Lon: 120.16, Load: 0.2},
	{ID: "sh-telecom", Country: "CN", Continent: "AS", Province: "SH", ISP: "telecom", Lat: 31.23, Lon: 121.47, Load: 0.1},
	{ID: "sh-unicom", Country: "CN", Continent: "AS", Province: "SH", ISP: "unicom", Lat: 31.23, Lon: 121.47, Load: 0.3},
	{ID: "nj-mobile", Country: "CN", Continent: "AS", Province: "JS", ISP: "mobile", Lat: 32.06, Lon: 118.80, Load: 0.1},
	{ID: "fz-telecom", Country: "CN", Continent: "AS", Province: "FJ", ISP: "telecom", Lat: 26.07, Lon: 119.30, Load: 0.1},
	{ID: "qd-unicom", Country: "CN", Continent: "AS", Province: "SD", ISP: "unicom", Lat: 36.07, Lon: 120.38, Load: 0.1},
	{ID: "bj-unicom", Country: "CN", Continent: "AS", Province: "BJ", ISP: "unicom", Lat: 39.90, Lon: 116.40, Load: 0.1},
	{ID: "gz-telecom", Country: "CN", Continent: "AS", Province: "GD", ISP: "telecom", Lat: 23.13, Lon: 113.26, Load: 0.1},
	{ID: "tokyo", Country: "JP", Continent: "AS", Province: "13", Lat: 35.68, Lon: 139.69, Load: 0.1},
	{ID: "virginia", Country: "US", Continent: "NA", Province: "VA", Lat: 38.9, Lon: -77.0, Load: 0.1},
}

func idx(id string) int {
	for i, n := range fixture {
		if n.ID == id {
			return i
		}
	}
	panic("unknown node " + id)
}

func ids(names ...string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = idx(n)
	}
	return out
}

func allIDs() []int {
	out := make([]int, len(fixture))
	for i := range out {
		out[i] = i
	}
	return out
}

// with returns a copy of fixture with f applied to the named nodes.
func with(f func(*Node), names ...string) []Node { return also(slices.Clone(fixture), f, names...) }

// also applies f to the named nodes of nodes.
func also(nodes []Node, f func(*Node), names ...string) []Node {
	for _, n := range names {
		f(&nodes[idx(n)])
	}
	return nodes
}

func load(l float64) func(*Node) { return func(n *Node) { n.Load = l } }
func down(n *Node)               { n.Down = true }

var (
	hzTelecom = Client{Country: "CN", Continent: "AS", Province: "ZJ", ISP: "telecom", HasCoords: true, Lat: 30.27, Lon: 120.16}
	hzMobile  = Client{Country: "CN", Continent: "AS", Province: "ZJ", ISP: "mobile", HasCoords: true, Lat: 30.27, Lon: 120.16}
	hzEdu     = Client{Country: "CN", Continent: "AS", Province: "ZJ", ISP: "edu", HasCoords: true, Lat: 30.27, Lon: 120.16}
	cnOnly    = Client{Country: "CN", Continent: "AS"}
)

// bestWins are the default parameters without the spread: the ladder's
// tests check which node is best, not how near-equal nodes share clients.
var bestWins = func() Params { p := DefaultParams; p.Spread = 0; return p }()

func TestChooseLadder(t *testing.T) {
	topo := DefaultTopology()
	tests := []struct {
		name   string
		client Client
		nodes  []Node // nil: fixture
		cand   []int
		want   string
		tier   Tier
		count  int
	}{
		{"province and carrier", hzTelecom, nil, allIDs(), "hz-telecom", TierProvinceISP, 1},
		{"province", hzMobile, nil, allIDs(), "hz-telecom", TierProvince, 2},
		{"province without carrier", Client{Country: "CN", Continent: "AS", Province: "ZJ"}, nil, allIDs(), "hz-telecom", TierProvince, 2},
		{"neighbour and carrier", hzTelecom, nil, ids("sh-telecom", "sh-unicom", "fz-telecom", "bj-unicom"), "sh-telecom", TierNeighborISP, 2},
		{"neighbour", hzEdu, nil, ids("sh-telecom", "sh-unicom", "nj-mobile", "fz-telecom", "bj-unicom"), "sh-telecom", TierNeighbor, 4},
		{"region", hzTelecom, nil, ids("qd-unicom", "bj-unicom", "gz-telecom"), "qd-unicom", TierRegion, 1},
		{"country", hzTelecom, nil, ids("bj-unicom", "gz-telecom", "tokyo"), "gz-telecom", TierCountry, 2},
		{"continent", hzTelecom, nil, ids("tokyo", "virginia"), "tokyo", TierContinent, 1},
		{"all", hzTelecom, nil, ids("virginia"), "virginia", TierAll, 1},
		{"location-free", Client{}, with(load(0.5), "virginia"), ids("hz-telecom", "virginia"), "hz-telecom", TierAll, 2},
		{"nil client", Client{}, nil, ids("virginia"), "virginia", TierAll, 1},
		{"country-only", cnOnly, nil, ids("hz-unicom", "bj-unicom", "tokyo"), "bj-unicom", TierCountry, 2},
		{"province unknown to topology", Client{Country: "CN", Province: "XX", ISP: "telecom"}, nil, ids("bj-unicom", "tokyo"), "bj-unicom", TierCountry, 1},
		{"foreign node in neighbour province code", hzTelecom, []Node{{ID: "x", Country: "US", Province: "SH", ISP: "telecom"}, {ID: "y", Country: "CN", Province: "GD"}}, []int{0, 1}, "y", TierCountry, 1},
		{"down skipped", hzTelecom, with(down, "hz-telecom"), allIDs(), "hz-unicom", TierProvince, 1},
		{"province overloaded: neighbour", hzTelecom, with(load(0.9), "hz-telecom", "hz-unicom"), allIDs(), "sh-telecom", TierNeighborISP, 2},
		{"province down: neighbour", hzMobile, with(down, "hz-telecom", "hz-unicom"), allIDs(), "nj-mobile", TierNeighborISP, 1},
		{"max load excluded", hzTelecom, with(load(0.8), "hz-telecom"), ids("hz-telecom", "sh-telecom"), "sh-telecom", TierNeighborISP, 1},
		{"below max load kept", hzTelecom, with(load(0.7999), "hz-telecom"), ids("hz-telecom", "sh-telecom"), "hz-telecom", TierProvinceISP, 1},
		{"all overloaded: fail open", hzTelecom, also(with(load(0.9), "hz-telecom", "sh-telecom"), load(0.85), "bj-unicom"), ids("hz-telecom", "sh-telecom", "bj-unicom"), "bj-unicom", TierFailOpen, 0},
		{"all down: fail open least loaded", hzTelecom, with(down, "hz-telecom", "hz-unicom", "sh-unicom"), ids("hz-telecom", "hz-unicom", "sh-unicom"), "hz-telecom", TierFailOpen, 0},
		{"fail open picks a down node if least loaded", hzTelecom, also(also(with(load(0.95), "hz-telecom"), load(0.85), "sh-telecom"), down, "sh-telecom"), ids("hz-telecom", "sh-telecom"), "sh-telecom", TierFailOpen, 0},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = fixture
			}
			c := &tc.client
			if tc.name == "nil client" {
				c = nil
			}
			d := Choose(c, nodes, tc.cand, topo, &bestWins, 42)
			if d.Node < 0 {
				t.Fatalf("Expected a node, got none (%+v)", d)
			}
			if got := nodes[d.Node].ID; got != tc.want {
				t.Errorf("Node = %s, want %s (%+v)", got, tc.want, d)
			}
			if d.Tier != tc.tier {
				t.Errorf("Tier = %s, want %s", d.Tier, tc.tier)
			}
			if d.Candidates != tc.count {
				t.Errorf("Candidates = %d, want %d", d.Candidates, tc.count)
			}
		})
	}
}

func TestChooseEmpty(t *testing.T) {
	for _, cand := range [][]int{nil, {}} {
		d := Choose(&hzTelecom, fixture, cand, DefaultTopology(), nil, 1)
		if d.Node != -1 || d.Tier != TierNone || d.Candidates != 0 {
			t.Errorf("Empty cand: got %+v, want Node -1 and TierNone", d)
		}
	}
}

func TestChooseNilTopology(t *testing.T) {
	// Without a topology the neighbour and region tiers never match.
	d := Choose(&hzTelecom, fixture, ids("sh-telecom", "qd-unicom"), nil, nil, 1)
	if d.Tier != TierCountry || d.Candidates != 2 {
		t.Errorf("Nil topology: got %+v, want TierCountry with 2 candidates", d)
	}
}

func TestChooseDistance(t *testing.T) {
	topo := DefaultTopology()
	tests := []struct {
		name      string
		client    Client
		cand      []int
		wantKm    float64 // -1: no distance
		wantScore float64
	}{
		// Same place: dist term 1; load 0.1; single candidate, no cost: cost term 1.
		{"coords", hzTelecom, ids("hz-telecom"), 0, 0.5 + 0.3*0.9 + 0.2},
		// Country-only: distance term left out.
		{"country-only", cnOnly, ids("bj-unicom"), -1, 0.3*0.9 + 0.2},
		{"location-free", Client{}, ids("bj-unicom"), -1, 0.3*0.9 + 0.2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Choose(&tc.client, fixture, tc.cand, topo, &DefaultParams, 7)
			if math.Abs(d.DistanceKm-tc.wantKm) > 1e-6 {
				t.Errorf("DistanceKm = %v, want %v", d.DistanceKm, tc.wantKm)
			}
			if math.Abs(d.Score-tc.wantScore) > 1e-9 {
				t.Errorf("Score = %v, want %v", d.Score, tc.wantScore)
			}
		})
	}

	// Country-only: a far node with lower load wins, since distance is ignored.
	nodes := with(load(0.5), "sh-telecom")
	nodes[idx("bj-unicom")].Load = 0.0
	d := Choose(&cnOnly, nodes, ids("sh-telecom", "bj-unicom"), topo, &DefaultParams, 7)
	if nodes[d.Node].ID != "bj-unicom" || d.DistanceKm != -1 {
		t.Errorf("Country-only: got %s at %v km, want bj-unicom at -1", nodes[d.Node].ID, d.DistanceKm)
	}
	// With coords in SH the near node wins despite its load.
	sh := Client{Country: "CN", HasCoords: true, Lat: 31.23, Lon: 121.47}
	d = Choose(&sh, nodes, ids("sh-telecom", "bj-unicom"), topo, &DefaultParams, 7)
	if nodes[d.Node].ID != "sh-telecom" || d.DistanceKm != 0 {
		t.Errorf("Coords: got %s at %v km, want sh-telecom at 0", nodes[d.Node].ID, d.DistanceKm)
	}
}

func TestChooseCost(t *testing.T) {
	mk := func(costs ...float64) []Node {
		nodes := make([]Node, len(costs))
		for i, c := range costs {
			nodes[i] = Node{ID: fmt.Sprint("n", i), Country: "CN", Cost: c}
		}
		return nodes
	}
	costOnly := &Params{Weights: Weights{Cost: 1}, MaxLoad: 0.8}
	tests := []struct {
		name      string
		nodes     []Node
		want      int
		wantScore float64
	}{
		{"cheapest wins", mk(10, 5, 2.5), 2, 0.75},
		{"zero cost is best", mk(10, 0), 1, 1},
		{"all zero cost", mk(0), 0, 1},
		{"normalized to max", mk(4), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cand := make([]int, len(tc.nodes))
			for i := range cand {
				cand[i] = i
			}
			d := Choose(&cnOnly, tc.nodes, cand, nil, costOnly, 3)
			if d.Node != tc.want || math.Abs(d.Score-tc.wantScore) > 1e-9 {
				t.Errorf("Got node %d score %v, want node %d score %v", d.Node, d.Score, tc.want, tc.wantScore)
			}
		})
	}

	// Cost is normalized over the winning tier only: a pricier node in a
	// lower tier does not change the score.
	nodes := mk(2, 8)
	nodes[0].Province = "ZJ"
	client := Client{Country: "CN", Province: "ZJ"}
	d := Choose(&client, nodes, []int{0, 1}, nil, costOnly, 3)
	if d.Tier != TierProvince || d.Score != 0 {
		t.Errorf("Tier cost: got %+v, want TierProvince with score 0", d)
	}
}

func TestChooseWeights(t *testing.T) {
	// near: SH, loaded; far: BJ, idle.
	nodes := []Node{
		{ID: "near", Country: "CN", Lat: 31.23, Lon: 121.47, Load: 0.7},
		{ID: "far", Country: "CN", Lat: 39.90, Lon: 116.40, Load: 0},
	}
	client := Client{Country: "CN", HasCoords: true, Lat: 31.23, Lon: 121.47}
	tests := []struct {
		w    Weights
		want string
	}{
		{Weights{0.5, 0.3, 0.2}, "near"},
		{Weights{1, 0, 0}, "near"},
		{Weights{0.1, 0.9, 0}, "far"},
		{Weights{0, 1, 0}, "far"},
	}
	for _, tc := range tests {
		p := &Params{Weights: tc.w, MaxLoad: 0.8}
		d := Choose(&client, nodes, []int{0, 1}, nil, p, 1)
		if got := nodes[d.Node].ID; got != tc.want {
			t.Errorf("Weights %+v: got %s, want %s", tc.w, got, tc.want)
		}
	}
}

func TestChooseTies(t *testing.T) {
	nodes := []Node{
		{ID: "a", Country: "CN", Province: "ZJ", Load: 0.1},
		{ID: "b", Country: "CN", Province: "ZJ", Load: 0.1},
		{ID: "c", Country: "CN", Province: "ZJ", Load: 0.5},
	}
	client := Client{Country: "CN", Province: "ZJ"}
	tests := []struct {
		name  string
		nodes []Node
		tier  Tier
	}{
		{"scored", nodes, TierProvince},
		{"fail open", []Node{
			{ID: "a", Load: 0.9, Down: true},
			{ID: "b", Load: 0.9},
			{ID: "c", Load: 0.95},
		}, TierFailOpen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]int{}
			for key := uint64(0); key < 64; key++ {
				d := Choose(&client, tc.nodes, []int{0, 1, 2}, nil, nil, key)
				if d.Tier != tc.tier || !d.Tied {
					t.Fatalf("Key %d: got %+v, want tier %s and Tied", key, d, tc.tier)
				}
				id := tc.nodes[d.Node].ID
				seen[id]++
				for range 3 {
					if again := Choose(&client, tc.nodes, []int{2, 1, 0}, nil, nil, key); again.Node != d.Node {
						t.Fatalf("Key %d: got %s then %s", key, id, tc.nodes[again.Node].ID)
					}
				}
			}
			if seen["a"] == 0 || seen["b"] == 0 || seen["c"] != 0 {
				t.Errorf("Tie spread over 64 keys = %v, want both a and b, never c", seen)
			}
		})
	}

	// A clear winner is not Tied.
	d := Choose(&client, nodes, []int{0, 2}, nil, nil, 1)
	if d.Tied || d.Node != 0 {
		t.Errorf("No tie: got %+v, want node 0 not Tied", d)
	}
}

func TestChooseNoAllocs(t *testing.T) {
	topo := DefaultTopology()
	nodes, cand := benchNodes(50)
	clients := []Client{hzTelecom, {Country: "CN", Province: "XZ", ISP: "edu", HasCoords: true, Lat: 29.65, Lon: 91.1}, {}}
	for _, c := range clients {
		allocs := testing.AllocsPerRun(100, func() {
			Choose(&c, nodes, cand, topo, &DefaultParams, 99)
		})
		if allocs != 0 {
			t.Errorf("Choose for %+v allocates %v times per call, want 0", c, allocs)
		}
	}
}

func TestHaversine(t *testing.T) {
	tests := []struct {
		name                   string
		lat1, lon1, lat2, lon2 float64
		want, tol              float64
	}{
		{"Beijing-Shanghai", 39.9042, 116.4074, 31.2304, 121.4737, 1067, 5},
		{"Shanghai-Beijing", 31.2304, 121.4737, 39.9042, 116.4074, 1067, 5},
		{"same point", 30, 120, 30, 120, 0, 1e-9},
		{"quarter meridian", 0, 0, 90, 0, math.Pi / 2 * 6371, 1e-6},
		{"antimeridian", 0, 179.5, 0, -179.5, 111.19, 0.1},
	}
	for _, tc := range tests {
		if got := Haversine(tc.lat1, tc.lon1, tc.lat2, tc.lon2); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("%s: Haversine = %.2f km, want %.2f±%v", tc.name, got, tc.want, tc.tol)
		}
	}
}

func TestTierString(t *testing.T) {
	tests := map[Tier]string{TierNone: "none", TierProvinceISP: "province_isp", TierRegion: "region", TierAll: "all", TierFailOpen: "fail_open", Tier(200): "unknown"}
	for tier, want := range tests {
		if got := tier.String(); got != want {
			t.Errorf("Tier(%d).String() = %q, want %q", tier, got, want)
		}
	}
}

// A client placed only at its province's capital is as near as can be
// told to every node in its province; other provinces are measured.
func TestChooseProvinceLevelCoords(t *testing.T) {
	nodes := []Node{
		{ID: "wenzhou", Country: "CN", Province: "ZJ", Lat: 28.0, Lon: 120.7},
		{ID: "shanghai", Country: "CN", Province: "SH", Lat: 31.23, Lon: 121.47},
	}
	c := Client{Country: "CN", Province: "ZJ", HasCoords: true, Lat: 30.27, Lon: 120.16, ProvinceLevel: true}
	if d := Choose(&c, nodes, []int{0}, nil, nil, 1); d.DistanceKm != 0 {
		t.Errorf("Same province: %v km, want 0", d.DistanceKm)
	}
	if d := Choose(&c, nodes, []int{1}, nil, nil, 1); d.DistanceKm < 100 {
		t.Errorf("Another province: %v km, want the distance from the capital", d.DistanceKm)
	}
	c.ProvinceLevel = false
	if d := Choose(&c, nodes, []int{0}, nil, nil, 1); d.DistanceKm < 200 {
		t.Errorf("City-level: %v km, want the distance to Wenzhou", d.DistanceKm)
	}
}

// TestHaversineToTheBit: the scorer's haversine, with the client's cosine
// taken once, gives the textbook formula's distance to the bit, so that
// no score, and no pick, moves.
func TestHaversineToTheBit(t *testing.T) {
	textbook := func(lat1, lon1, lat2, lon2 float64) float64 {
		const r, rad = 6371.0, math.Pi / 180
		dphi, dlmb := (lat2-lat1)*rad, (lon2-lon1)*rad
		a := math.Sin(dphi/2)*math.Sin(dphi/2) +
			math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlmb/2)*math.Sin(dlmb/2)
		return 2 * r * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		lat1, lon1 := rng.Float64()*180-90, rng.Float64()*360-180
		lat2, lon2 := rng.Float64()*180-90, rng.Float64()*360-180
		want := textbook(lat1, lon1, lat2, lon2)
		s := newScorer(&Client{HasCoords: true, Lat: lat1, Lon: lon1}, &DefaultParams.Weights, 0, nil)
		if got := haversine(lat1, s.cosLat, lon1, lat2, lon2); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("(%v,%v)-(%v,%v): %v, textbook %v", lat1, lon1, lat2, lon2, got, want)
		}
		if got := Haversine(lat1, lon1, lat2, lon2); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Haversine (%v,%v)-(%v,%v): %v, textbook %v", lat1, lon1, lat2, lon2, got, want)
		}
	}
}
