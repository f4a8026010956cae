package health

import (
	"testing"
	"time"
)

func TestNodeHysteresis(t *testing.T) {
	type step struct {
		ok        bool
		at        time.Duration // since t0
		want      State
		wantTrans bool
	}
	const hold = time.Minute
	tests := []struct {
		name  string
		steps []step
	}{
		{"first success is up", []step{{true, 0, StateUp, true}, {true, 1, StateUp, false}}},
		{"first failure is down without hold-down, needs rise", []step{
			{false, 0, StateDown, true}, {true, 1, StateDown, false}, {true, 2, StateUp, true},
		}},
		{"down after fall failures", []step{
			{true, 0, StateUp, true}, {false, 1, StateUp, false}, {false, 2, StateUp, false}, {false, 3, StateDown, true},
			{false, 4, StateDown, false},
		}},
		{"a success resets the failure count", []step{
			{true, 0, StateUp, true}, {false, 1, StateUp, false}, {false, 2, StateUp, false}, {true, 3, StateUp, false},
			{false, 4, StateUp, false}, {false, 5, StateUp, false}, {false, 6, StateDown, true},
		}},
		{"stays down for hold_down although probes pass", []step{
			{true, 0, StateUp, true}, {false, 1, StateUp, false}, {false, 2, StateUp, false}, {false, 3, StateDown, true},
			{true, 4, StateDown, false}, {true, 5, StateDown, false}, {true, 6, StateDown, false},
			{true, 3 + hold - 1, StateDown, false}, {true, 3 + hold, StateUp, true},
		}},
		{"after hold_down, rise successes are needed", []step{
			{true, 0, StateUp, true}, {false, 1, StateUp, false}, {false, 2, StateUp, false}, {false, 3, StateDown, true},
			{true, 2 * hold, StateDown, false}, {false, 2*hold + 1, StateDown, false},
			{true, 2*hold + 2, StateDown, false}, {true, 2*hold + 3, StateUp, true},
		}},
		{"a flapping node stays down", []step{
			{true, 0, StateUp, true}, {false, 1, StateUp, false}, {false, 2, StateUp, false}, {false, 3, StateDown, true},
			{true, 4, StateDown, false}, {false, 5, StateDown, false}, {true, 6, StateDown, false}, {false, 7, StateDown, false},
			{true, hold, StateDown, false}, {false, hold + 1, StateDown, false}, {true, hold + 2, StateDown, false},
		}},
	}
	t0 := time.Unix(1000, 0)
	for _, tc := range tests {
		n := node{rise: 2, fall: 3, holdDown: hold}
		for i, s := range tc.steps {
			reason := ""
			if !s.ok {
				reason = ReasonConnect
			}
			now := t0.Add(s.at)
			_, trans := n.observe(s.ok, reason, 0, false, now)
			if n.st.State != s.want || trans != s.wantTrans {
				t.Fatalf("Test %q step %d: expected %s (transition %t), got %s (transition %t)", tc.name, i, s.want, s.wantTrans, n.st.State, trans)
			}
			if trans && !n.st.Since.Equal(now) {
				t.Errorf("Test %q step %d: expected since %v, got %v", tc.name, i, now, n.st.Since)
			}
			if n.st.State == StateUp && n.st.Reason != "" {
				t.Errorf("Test %q step %d: expected no reason when up, got %q", tc.name, i, n.st.Reason)
			}
		}
	}
}

func TestNodeLoad(t *testing.T) {
	type step struct {
		ok          bool
		load        float64
		hasLoad     bool
		wantChanged bool
		wantLoad    float64
	}
	steps := []step{
		{true, 0.5, true, true, 0.5},     // first: up and load
		{true, 0.5, true, false, 0.5},    // same load: nothing changes
		{true, 0.95, true, true, 0.95},   // load changes
		{false, 0, false, true, 0.95},    // failure keeps the load; Fails counts it
		{true, 0.95, true, false, 0.95},  // same again
		{true, 0, true, true, 0},         // zero is a real load
		{true, 0, false, false, 0},       // no load reported
		{false, 0, false, true, 0},       // failure: counted
		{false, 0, false, true, 0},       // second failure
		{false, 0, false, true, 0},       // fall reached: state changes
		{true, 0.25, true, true, 0.25},   // load updates while down
		{true, 0.25, true, false, 0.25},  // hold-down keeps it down
		{false, 0.25, false, true, 0.25}, // still down, one more failure
	}
	n := node{rise: 2, fall: 3, holdDown: time.Hour}
	now := time.Unix(1000, 0)
	for i, s := range steps {
		changed, _ := n.observe(s.ok, ReasonBody, s.load, s.hasLoad, now)
		if changed != s.wantChanged || n.st.Load != s.wantLoad || !n.st.HasLoad {
			t.Fatalf("Step %d: expected changed %t load %v, got changed %t load %v (has %t)", i, s.wantChanged, s.wantLoad, changed, n.st.Load, n.st.HasLoad)
		}
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{StateUnknown: "unknown", StateUp: "up", StateDown: "down", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("Expected %q, got %q", want, s.String())
		}
	}
	var nilSnap *Snapshot
	if _, ok := nilSnap.Status("a"); ok {
		t.Errorf("Expected a nil snapshot to hold no nodes")
	}
}

// Fails and Flaps count the failed probes and the up/down transitions of
// the last Window, the first verdict not being a flap; older ones fall out
// at the next result.
func TestNodeHistory(t *testing.T) {
	n := node{rise: 1, fall: 1}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		ok           bool
		at           time.Duration
		fails, flaps int
	}{
		{false, 0, 1, 0},                             // first verdict: down, not a flap
		{true, time.Second, 1, 1},                    // up: a flap
		{false, 2 * time.Second, 2, 2},               // down again
		{true, 3 * time.Second, 2, 3},                // up
		{true, Window + 1500*time.Millisecond, 1, 2}, // the first failure and flap fall out
		{true, Window + 4*time.Second, 0, 0},         // all of them
	}
	for i, s := range steps {
		n.observe(s.ok, ReasonConnect, 0, false, t0.Add(s.at))
		if n.st.Fails != s.fails || n.st.Flaps != s.flaps {
			t.Fatalf("Step %d: fails %d flaps %d, want %d and %d", i, n.st.Fails, n.st.Flaps, s.fails, s.flaps)
		}
	}
	for i := range 2 * historyCap {
		n.observe(false, ReasonConnect, 0, false, t0.Add(Window+time.Duration(5+i)*time.Second))
	}
	if n.st.Fails != historyCap {
		t.Errorf("Fails %d after %d failures, want the cap %d", n.st.Fails, 2*historyCap, historyCap)
	}
}
