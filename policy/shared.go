package policy

import (
	"slices"

	"github.com/gslbdns/gslb/scoring"
)

// Shared is a fleet's combined probe verdicts.
type Shared interface {
	// Decide is node's verdict for clients of carrier ("" for a carrier
	// no member sees from), and the vantage that decided; ok false: no
	// fresh verdict, this instance's probes decide.
	Decide(node, carrier string) (down bool, vantage string, ok bool)
	// Carriers are the vantages' carriers, whose clients may see a node
	// otherwise than the rest.
	Carriers() []string
}

// carrierView is the nodes and states as clients of one carrier see them.
type carrierView struct {
	nodes  []scoring.Node
	status []NodeStatus
}

// applyShared folds the fleet's verdicts into the view: the default nodes
// get the fleet-wide verdicts, and each vantage's carrier a copy with its
// own. A drained node stays down everywhere.
func (v *View) applyShared(in Inputs, drained []bool) {
	own, ownSt := slices.Clone(v.Nodes), slices.Clone(v.Status)
	fold := func(nodes []scoring.Node, status []NodeStatus, carrier string) bool {
		changed := false
		for i := range v.Table.Nodes {
			if drained[i] {
				continue
			}
			down, vantage, ok := in.Shared.Decide(v.Table.Nodes[i].ID, carrier)
			if !ok {
				continue
			}
			status[i].Vantage = vantage
			if down == nodes[i].Down && status[i].State != StateUnknown && status[i].State != StateUnprobed {
				continue
			}
			nodes[i].Down, changed = down, true
			if down {
				status[i].State, status[i].Reason = StateDown, "down as seen from "+vantage
			} else {
				status[i].State, status[i].Reason = StateUp, ""
			}
		}
		return changed
	}
	fold(v.Nodes, v.Status, "")
	for _, c := range in.Shared.Carriers() {
		cv := carrierView{slices.Clone(own), slices.Clone(ownSt)}
		fold(cv.nodes, cv.status, c)
		if v.carriers == nil {
			v.carriers = map[string]*carrierView{}
		}
		v.carriers[c] = &cv
	}
}

// nodesFor is the nodes and states clients of carrier see.
func (v *View) nodesFor(carrier string) ([]scoring.Node, []NodeStatus) {
	if v.carriers == nil { // no fleet verdicts: the common case, without a lookup
		return v.Nodes, v.Status
	}
	if cv := v.carriers[carrier]; cv != nil {
		return cv.nodes, cv.status
	}
	return v.Nodes, v.Status
}

// StatusFor is the nodes' states as clients of carrier see them.
func (v *View) StatusFor(carrier string) []NodeStatus {
	_, st := v.nodesFor(carrier)
	return st
}
