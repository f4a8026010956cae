// Package policy holds what a decision reads and how it is made: a View is
// a node table with the probes' verdicts and loads folded in, and the
// plugin's parameters; Decide runs the ladder and the score over it. The
// handler, the tools and the admin API decide through the same code.
package policy

import (
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"
)

// Node states as metadata and the tools report them.
const (
	StateUp       = "up"
	StateDown     = "down"
	StateUnknown  = "unknown"  // probed, no result yet: usable
	StateUnprobed = "unprobed" // no probe
)

// NodeStatus is a node's health as the view saw it.
type NodeStatus struct {
	State  string
	Reason string    // the failure that took the node down
	Since  time.Time // its last transition; zero when unprobed
}

// View is an immutable snapshot: the control plane builds a new one on
// every change, and queries read it through an atomic pointer.
type View struct {
	Table  *table.Table
	Nodes  []scoring.Node // Table.Nodes with live load and health
	Status []NodeStatus   // per node
	Params *scoring.Params
	Serial uint32 // the SOA serial: moves when the table does
}

// NewView folds snap's verdicts and loads into t.
func NewView(t *table.Table, snap *health.Snapshot, p *scoring.Params, serial uint32) *View {
	v := &View{Table: t, Nodes: make([]scoring.Node, len(t.Nodes)), Status: make([]NodeStatus, len(t.Nodes)),
		Params: p, Serial: serial}
	for i := range t.Nodes {
		v.Nodes[i] = t.Nodes[i].Node
		v.Status[i] = NodeStatus{State: StateUnprobed}
		st, ok := snap.Status(t.Nodes[i].ID)
		if !ok {
			continue
		}
		v.Status[i] = NodeStatus{State: st.State.String(), Reason: st.Reason, Since: st.Since}
		v.Nodes[i].Down = st.State == health.StateDown
		if st.HasLoad {
			v.Nodes[i].Load = st.Load
		}
	}
	return v
}

// Client is what the ladder and the score see of a located client: nothing
// for a special address.
func Client(loc *geo.Location) scoring.Client {
	if loc.Special {
		return scoring.Client{}
	}
	return scoring.Client{
		Country:       loc.Country,
		Continent:     loc.Continent,
		Province:      loc.Province,
		ISP:           loc.ISP,
		HasCoords:     loc.HasCoords,
		Lat:           loc.Lat,
		Lon:           loc.Lon,
		ProvinceLevel: loc.ProvinceCoords,
	}
}
