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
	Error   string    // its text, e.g. "connect: connection refused"
	Since   time.Time // last transition
	From    State     // the state before it: a node up From down is recovering
	// Fails and Flaps count the failed probes and the up/down transitions
	// in the last Window (at most historyCap each): a node's steadiness.
	Fails, Flaps int
}

// Window is how far back Status.Fails and Status.Flaps look.
const Window = 10 * time.Minute

// historyCap bounds the history a node keeps.
const historyCap = 64

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
	// failAt and flapAt are the times of the failed probes and of the
	// transitions within Window, oldest first.
	failAt, flapAt []time.Time
}

// observe feeds one probe result. It returns whether the published status
// changed (state or load) and whether the state changed.
func (n *node) observe(ok bool, reason string, load float64, hasLoad bool, now time.Time) (changed, transition bool) {
	was := n.st.State
	changed, transition = n.step(ok, reason, load, hasLoad, now)
	if !ok {
		n.failAt = remember(n.failAt, now)
	}
	if transition && was != StateUnknown {
		n.flapAt = remember(n.flapAt, now)
	}
	n.failAt, n.flapAt = forget(n.failAt, now), forget(n.flapAt, now)
	if f, fl := len(n.failAt), len(n.flapAt); f != n.st.Fails || fl != n.st.Flaps {
		n.st.Fails, n.st.Flaps = f, fl
		changed = true
	}
	return changed, transition
}

// remember appends t, dropping the oldest entry at historyCap.
func remember(ts []time.Time, t time.Time) []time.Time {
	if len(ts) == historyCap {
		ts = append(ts[:0], ts[1:]...)
	}
	return append(ts, t)
}

// forget drops the times older than Window before now.
func forget(ts []time.Time, now time.Time) []time.Time {
	k := 0
	for k < len(ts) && now.Sub(ts[k]) > Window {
		k++
	}
	if k == 0 {
		return ts
	}
	return append(ts[:0], ts[k:]...)
}

// step is the hysteresis proper.
func (n *node) step(ok bool, reason string, load float64, hasLoad bool, now time.Time) (changed, transition bool) {
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
