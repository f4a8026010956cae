package health

import "time"

// State is a node's health as the probes see it.
type State uint8

// States. StateUnknown (no result yet) is treated as usable by the caller.
const (
	StateUnknown State = iota
	StateUp
	StateDown
)

func (s State) String() string {
	switch s {
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	}
	return "unknown"
}

// Failure reasons, kept in Status.Reason and the failures metric.
const (
	ReasonConnect = "connect"
	ReasonTimeout = "timeout"
	ReasonStatus  = "status"
	ReasonBody    = "body"
	ReasonHeader  = "header" // the response headers exceed 16 KiB
	ReasonTLS     = "tls"
)

// Status is a node's published health.
type Status struct {
	State   State
	Load    float64 // last load reported by load_field
	HasLoad bool
	Reason  string    // failure that took the node down ("" when up or unknown)
	Since   time.Time // last transition
	From    State     // the state before it: a node up From down is recovering
}

// Snapshot is an immutable view of every probed node.
type Snapshot struct {
	nodes map[string]Status
}

// NewSnapshot is a snapshot of the given statuses, for tools and tests
// that decide without probing.
func NewSnapshot(m map[string]Status) *Snapshot { return &Snapshot{nodes: m} }

// Status returns the status of node id; false if the node is not probed.
func (s *Snapshot) Status(id string) (Status, bool) {
	if s == nil {
		return Status{}, false
	}
	st, ok := s.nodes[id]
	return st, ok
}

// equal reports whether s holds exactly the statuses of m.
func (s *Snapshot) equal(m map[string]Status) bool {
	if s == nil || len(s.nodes) != len(m) {
		return false
	}
	for id, st := range m {
		if o, ok := s.nodes[id]; !ok || o != st {
			return false
		}
	}
	return true
}

// node is the hysteresis state of one target; only the aggregator touches it.
type node struct {
	rise, fall int
	holdDown   time.Duration

	st        Status
	seen      bool // has a first result
	succ      int  // consecutive successes
	fails     int  // consecutive failures
	holdUntil time.Time
}

// observe feeds one probe result. It returns whether the published status
// changed (state or load) and whether the state changed.
func (n *node) observe(ok bool, reason string, load float64, hasLoad bool, now time.Time) (changed, transition bool) {
	n.seen = true
	if ok {
		n.succ++
		n.fails = 0
		if hasLoad && (!n.st.HasLoad || n.st.Load != load) {
			n.st.Load, n.st.HasLoad = load, true
			changed = true
		}
		switch n.st.State {
		case StateUnknown:
			n.set(StateUp, "", now)
			return true, true
		case StateDown:
			if n.succ >= n.rise && !now.Before(n.holdUntil) {
				n.set(StateUp, "", now)
				return true, true
			}
		}
		return changed, false
	}
	n.fails++
	n.succ = 0
	switch n.st.State {
	case StateUnknown:
		// First result: down, but without hold-down.
		n.holdUntil = time.Time{}
		n.set(StateDown, reason, now)
		return true, true
	case StateUp:
		if n.fails >= n.fall {
			n.holdUntil = now.Add(n.holdDown)
			n.set(StateDown, reason, now)
			return true, true
		}
	}
	return false, false
}

func (n *node) set(s State, reason string, now time.Time) {
	n.st.From = n.st.State
	n.st.State, n.st.Reason, n.st.Since = s, reason, now
}
