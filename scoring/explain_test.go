package scoring

import "testing"

// Trace agrees with the decision Decide makes: the winner is usable and on
// the winning rung, no usable node is on a better one, and an unusable node
// says why.
func TestTraceAgreesWithDecide(t *testing.T) {
	nodes := zjTelecom(0.30, 0.95, 0.30)
	nodes = append(nodes,
		Node{ID: "sh-down", Country: "CN", Province: "SH", ISP: "telecom", Lat: 31.23, Lon: 121.47, Down: true},
		Node{ID: "bj", Country: "CN", Province: "BJ", ISP: "unicom", Lat: 39.9, Lon: 116.4, Cost: 2})
	cand := []int{0, 1, 2, 3, 4, 5}
	for _, c := range []Client{hzTelecom, {Country: "CN", Province: "BJ", ISP: "unicom", HasCoords: true, Lat: 39.9, Lon: 116.4}, {}} {
		for key := range 200 {
			in := &Input{Client: &c, Nodes: nodes, Cand: cand, Topo: DefaultTopology(), Key: subnetKey(key)}
			got, traces := Decide(in), Trace(in)
			if len(traces) != len(cand) {
				t.Fatalf("Expected a trace per candidate, got %d", len(traces))
			}
			for _, tr := range traces {
				n := nodes[tr.Node]
				switch {
				case tr.Node == got.Node && (!tr.Usable || tr.Tier != got.Tier):
					t.Errorf("Winner %s traced %+v, decision %+v", n.ID, tr, got)
				case n.Down && (tr.Usable || tr.Reason != ReasonDown):
					t.Errorf("Down node %s traced %+v", n.ID, tr)
				case n.Load >= DefaultParams.MaxLoad && (tr.Usable || tr.Reason != ReasonOverloaded):
					t.Errorf("Overloaded node %s traced %+v", n.ID, tr)
				case tr.Usable && tr.Tier < got.Tier:
					t.Errorf("Usable %s on a better rung (%s) than the decision's %s", n.ID, tr.Tier, got.Tier)
				}
			}
		}
	}
}
