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
	StateDrained  = "drained"  // an operator took it out; still probed
)

// Drain is what the admin API said of a node: drained since Since, or
// undrained at Since and ramping back over the cooldown.
type Drain struct {
	Drained bool
	Since   time.Time
}

// NodeStatus is a node's health as the view saw it.
type NodeStatus struct {
	State  string
	Reason string    // the failure that took the node down
	Error  string    // its text from this instance's probe
	Since  time.Time // its last transition; zero when unprobed
	// Vantage is the fleet vantage whose verdict decided (a carrier, or
	// "fleet"); "": this instance's probes.
	Vantage string
}

// View is an immutable snapshot: the control plane builds a new one on
// every change, and queries read it through an atomic pointer.
type View struct {
	Table  *table.Table
	Nodes  []scoring.Node // Table.Nodes with live load, health and ramps
	Status []NodeStatus   // per node
	Params *scoring.Params
	Links  *scoring.Links // the quality matrix's fresh rows; nil: none
	Serial uint32         // the SOA serial: moves when the files do

	cache *Cache // nil: every decision is made in full
	gen   uint64 // the cache's generation this view reads and writes
	// shedding marks the nodes that turn some subnets away (a cooldown
	// ramp, a load between the watermarks): decisions among them are
	// per subnet, and not cached.
	shedding []bool
	anyShed  bool
	anyFails bool // a node failed a probe in the health window
	// carriers: the nodes as clients of a fleet vantage's carrier see
	// them, where that differs; the cache keys on the carrier.
	carriers map[string]*carrierView
}

// Inputs are what a view is built from.
type Inputs struct {
	Table    *table.Table
	Snapshot *health.Snapshot
	Params   *scoring.Params
	Links    *scoring.Links
	Serial   uint32
	Now      time.Time
	// Cooldown is how long a node back from down takes to take all its
	// clients back; 0: at once.
	Cooldown time.Duration
	// Cache keeps the prepared decisions of the views built with it,
	// each view in a generation of its own; nil: no cache.
	Cache *Cache
	// Drains by node id: a drained node is not usable, and one undrained
	// ramps back like a node back up.
	Drains map[string]Drain
	// Shared are the fleet's verdicts; nil: this instance's probes alone.
	Shared Shared
}

// rampSteps is how many steps a cooldown ramp takes: the view is rebuilt
// at each, so that queries never read the clock.
const rampSteps = 20

// NewView folds the probes' verdicts and loads into the table, and the
// cooldown ramps of the nodes that came back. It returns when a ramp moves
// on and the view should be rebuilt (zero: no ramp).
func NewView(in Inputs) (*View, time.Time) {
	t := in.Table
	v := &View{Table: t, Nodes: make([]scoring.Node, len(t.Nodes)), Status: make([]NodeStatus, len(t.Nodes)),
		Params: in.Params, Links: in.Links, Serial: in.Serial, cache: in.Cache, gen: in.Cache.next(),
		shedding: make([]bool, len(t.Nodes))}
	var next time.Time
	drained := make([]bool, len(t.Nodes))
	for i := range t.Nodes {
		v.Nodes[i] = t.Nodes[i].Node
		v.Status[i] = NodeStatus{State: StateUnprobed}
		if st, ok := in.Snapshot.Status(t.Nodes[i].ID); ok {
			v.Status[i] = NodeStatus{State: st.State.String(), Reason: st.Reason, Error: st.Error, Since: st.Since}
			v.Nodes[i].Down = st.State == health.StateDown
			v.Nodes[i].Fails, v.Nodes[i].Flaps = st.Fails, st.Flaps
			v.anyFails = v.anyFails || st.Fails > 0
			if st.HasLoad {
				v.Nodes[i].Load = st.Load
			}
			if st.State == health.StateUp && st.From == health.StateDown {
				next = v.rampFrom(i, st.Since, in, next)
			}
		}
		if d, ok := in.Drains[t.Nodes[i].ID]; ok {
			if d.Drained {
				drained[i] = true
				v.Nodes[i].Down = true
				v.Status[i] = NodeStatus{State: StateDrained, Reason: StateDrained, Since: d.Since}
			} else if !v.Nodes[i].Down {
				next = v.rampFrom(i, d.Since, in, next)
			}
		}
		n := &v.Nodes[i]
		v.shedding[i] = n.Shed > 0 || in.Params.ShedHigh > 0 && n.Load > in.Params.ShedLow
		v.anyShed = v.anyShed || v.shedding[i]
	}
	if in.Shared != nil {
		v.applyShared(in, drained)
	}
	return v, next
}

// rampFrom sets node i's share of turned-away subnets for a return at
// since, keeping the larger of two ramps, and returns the earlier of next
// and the ramp's next step.
func (v *View) rampFrom(i int, since time.Time, in Inputs, next time.Time) time.Time {
	shed, at := Ramp(since, in.Now, in.Cooldown)
	v.Nodes[i].Shed = max(v.Nodes[i].Shed, shed)
	if !at.IsZero() && (next.IsZero() || at.Before(next)) {
		next = at
	}
	return next
}

// Ramp is the share of subnets a node back up since turns away at now,
// falling in rampSteps steps over cooldown, and when the next step comes.
func Ramp(since, now time.Time, cooldown time.Duration) (float64, time.Time) {
	elapsed := now.Sub(since)
	if cooldown <= 0 || elapsed >= cooldown {
		return 0, time.Time{}
	}
	step := cooldown / rampSteps
	k := max(elapsed, 0) / step
	return 1 - float64(k)/rampSteps, since.Add((k + 1) * step)
}

// ClientInto sets c to what the ladder and the score see of a located
// client (nothing for a special address), field by field: a returned
// Client is a copy on the caller's frame, which deepens a query's stack.
func ClientInto(loc *geo.Location, c *scoring.Client) {
	if loc.Special {
		*c = scoring.Client{}
		return
	}
	c.Country, c.Continent, c.Province, c.ISP = loc.Country, loc.Continent, loc.Province, loc.ISP
	c.HasCoords, c.Lat, c.Lon, c.ProvinceLevel = loc.HasCoords, loc.Lat, loc.Lon, loc.ProvinceCoords
}

// ClientOf is ClientInto's client, returned.
func ClientOf(loc *geo.Location) scoring.Client {
	var c scoring.Client
	ClientInto(loc, &c)
	return c
}
