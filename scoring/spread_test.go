package scoring

import (
	"fmt"
	"math"
	"testing"
)

// zjTelecom are three equal Zhejiang telecom nodes, and one in Shanghai.
func zjTelecom(loads ...float64) []Node {
	nodes := []Node{
		{ID: "hz-1", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16},
		{ID: "hz-2", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16},
		{ID: "hz-3", Country: "CN", Province: "ZJ", ISP: "telecom", Lat: 30.27, Lon: 120.16},
		{ID: "sh-1", Country: "CN", Province: "SH", ISP: "telecom", Lat: 31.23, Lon: 121.47},
	}
	for i, l := range loads {
		nodes[i].Load = l
	}
	return nodes
}

// subnetKey is the key of 10.x.y.0/24, as locate.KeyOf makes it.
func subnetKey(i int) uint64 { return uint64(10<<24|i<<8) | 4<<32 }

func shares(nodes []Node, p *Params, n int) (map[string]int, []string) {
	got := map[string]int{}
	who := make([]string, n)
	for i := range n {
		d := Choose(&hzTelecom, nodes, []int{0, 1, 2, 3}, DefaultTopology(), p, subnetKey(i))
		who[i] = nodes[d.Node].ID
		got[who[i]]++
	}
	return got, who
}

// Three equal nodes share 10,000 subnets evenly; a small load change on
// one moves few subnets, all of them away from it.
func TestSpreadSharesAndStability(t *testing.T) {
	const n = 10000
	before, was := shares(zjTelecom(0.30, 0.30, 0.30), &DefaultParams, n)
	for _, id := range []string{"hz-1", "hz-2", "hz-3"} {
		if f := float64(before[id]) / n; math.Abs(f-1.0/3) > 0.05 {
			t.Errorf("%s got %.1f%% of the subnets, want 33%% ± 5%%", id, 100*f)
		}
	}
	after, is := shares(zjTelecom(0.35, 0.30, 0.30), &DefaultParams, n)
	moved := 0
	for i := range n {
		if was[i] != is[i] {
			moved++
			if was[i] != "hz-1" {
				t.Fatalf("Subnet %d moved from %s to %s: only hz-1's subnets may move", i, was[i], is[i])
			}
		}
	}
	if f := float64(moved) / n; f > 0.10 {
		t.Errorf("%.1f%% of the subnets moved, want at most 10%%", 100*f)
	}
	t.Logf("Equal: %v; hz-1 at 0.35: %v; moved %d of %d", before, after, moved, n)

	// spread 0: the best wins, ties aside.
	best := DefaultParams
	best.Spread = 0
	if got, _ := shares(zjTelecom(0.35, 0.30, 0.30), &best, 1000); got["hz-1"] != 0 {
		t.Errorf("With spread 0 the less loaded nodes win, got %v", got)
	}
}

// Between the watermarks a node turns away a share of subnets that grows
// linearly with its load; they go down the ladder (here to Shanghai), the
// same ones at every step, and at the high watermark it takes none.
func TestShedLoad(t *testing.T) {
	p := DefaultParams
	p.ShedLow, p.ShedHigh = 0.6, 0.9
	const n = 6000
	var prevWho []string
	for _, load := range []float64{0.5, 0.6, 0.7, 0.75, 0.8, 0.9} {
		nodes := zjTelecom(load)
		kept, who := 0, make([]string, n)
		for i := range n {
			d := Choose(&hzTelecom, nodes, []int{0, 3}, DefaultTopology(), &p, subnetKey(i))
			who[i] = nodes[d.Node].ID
			if who[i] == "hz-1" {
				kept++
				if prevWho != nil && prevWho[i] == "sh-1" {
					t.Fatalf("At load %.2f subnet %d came back to hz-1", load, i)
				}
			}
		}
		want := 1.0
		if load > 0.6 {
			want = max(0, (0.9-load)/0.3)
		}
		if f := float64(kept) / n; math.Abs(f-want) > 0.03 {
			t.Errorf("At load %.2f hz-1 kept %.1f%% of its subnets, want %.0f%%", load, 100*f, 100*want)
		}
		prevWho = who
	}
}

// A node's Shed turns away a stable share of subnets: those it keeps at
// 0.5 are kept at 0.25, and a node alone in its tier sends the rest down
// the ladder.
func TestShedRamp(t *testing.T) {
	nodes := zjTelecom()[:1]
	nodes = append(nodes, zjTelecom()[3]) // hz-1 and sh-1
	kept := func(shed float64) map[int]bool {
		nodes[0].Shed = shed
		k := map[int]bool{}
		for i := range 4000 {
			d := Choose(&hzTelecom, nodes, []int{0, 1}, DefaultTopology(), nil, subnetKey(i))
			if d.Node == 0 {
				k[i] = true
			}
			if nodes[d.Node].ID == "sh-1" && d.Tier != TierNeighborISP {
				t.Fatalf("A turned-away subnet went to tier %s, want neighbor_isp", d.Tier)
			}
		}
		return k
	}
	at75, at50, at0 := kept(0.75), kept(0.5), kept(0)
	if f := float64(len(at50)) / 4000; math.Abs(f-0.5) > 0.05 {
		t.Errorf("Shed 0.5 kept %.1f%%, want about half", 100*f)
	}
	for i := range at75 {
		if !at50[i] {
			t.Fatalf("Subnet %d kept at shed 0.75 but not at 0.5", i)
		}
	}
	if len(at0) != 4000 {
		t.Errorf("Shed 0 kept %d of 4000", len(at0))
	}
}

// The quality term prefers the better link; a lossy row removes the node
// for that row's clients only.
func TestQuality(t *testing.T) {
	nodes := zjTelecom(0.3, 0.3, 0.3)
	q := NewLinks()
	q.Set("ZJ", "telecom", 0, Link{RTTMs: 5})
	q.Set("ZJ", "telecom", 1, Link{RTTMs: 80})
	q.Set("", "telecom", 2, Link{RTTMs: 10, Loss: 0.3})
	p := DefaultParams
	p.Weights = Weights{0.4, 0.2, 0.1, 0.3}
	p.Spread = 0
	for k := range 200 {
		d := Decide(&Input{Client: &hzTelecom, Nodes: nodes, Cand: []int{0, 1, 2, 3}, Topo: DefaultTopology(), Params: &p, Quality: q, Key: subnetKey(k)})
		if d.Node != 0 || d.RTTMs != 5 {
			t.Fatalf("Got %s (rtt %v), want hz-1 with the best link", nodes[d.Node].ID, d.RTTMs)
		}
	}
	// hz-3's 30% loss is for telecom clients; a unicom client may get it.
	hzUnicom := Client{Country: "CN", Province: "ZJ", ISP: "unicom", HasCoords: true, Lat: 30.27, Lon: 120.16}
	seen := map[string]bool{}
	for k := range 300 {
		for _, c := range []*Client{&hzTelecom, &hzUnicom} {
			d := Decide(&Input{Client: c, Nodes: nodes, Cand: []int{1, 2}, Topo: DefaultTopology(), Params: &DefaultParams, Quality: q, Key: subnetKey(k)})
			seen[fmt.Sprint(c.ISP, "/", nodes[d.Node].ID)] = true
		}
	}
	if seen["telecom/hz-3"] || !seen["unicom/hz-3"] {
		t.Errorf("Got %v: hz-3 must serve unicom clients and never telecom ones", seen)
	}
}

// answers N orders the spread, the rest of the tier, then lower tiers.
func TestAnswersOrder(t *testing.T) {
	nodes := zjTelecom(0.3, 0.3, 0.7)
	p := DefaultParams
	p.Answers = 4
	d := Choose(&hzTelecom, nodes, []int{0, 1, 2, 3}, DefaultTopology(), &p, 7)
	if d.NOrder != 4 || int(d.Order[0]) != d.Node {
		t.Fatalf("Order %v (%d), want 4 nodes, the winner first", d.Order, d.NOrder)
	}
	if got := nodes[d.Order[2]].ID; got != "hz-3" {
		t.Errorf("Third %s, want hz-3, the rest of the tier", got)
	}
	if got := nodes[d.Order[3]].ID; got != "sh-1" {
		t.Errorf("Fourth %s, want sh-1 from the tier below", got)
	}
}
