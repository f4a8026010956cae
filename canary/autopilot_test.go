package canary

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/table"
)

func pilotRollout(t *testing.T, file string, plan *config.Plan) *Rollout {
	t.Helper()
	return New(config.Canary{File: file, Percent: plan.Steps[0], RollbackCross: -1, RollbackMin: 100, Window: time.Minute, Plan: plan},
		&table.Table{}, KeysOf("pilot test salt 0123456789"))
}

// feedRows sends one window of rows for 2000 /24s of one place: each
// cohort's 5xx, hit ratio and TTFB p50 as given.
func feedRows(t *testing.T, r *Rollout, start time.Time, stable, canary [3]float64) {
	t.Helper()
	for i := range 2000 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
		v := stable
		if r.Picks(locate.KeyOf(p.Addr())) {
			v = canary
		}
		n, e, h, ms := 200.0, 200*v[0], 200*v[1], v[2]
		p95 := ms * 3
		y := feed.RowJSON{Node: "n", Start: start.Format(time.RFC3339Nano), Seconds: 60, Client: p.String(), Requests: &n, Errors: e, Hits: &h,
			TTFBP50: &ms, TTFBP95: &p95}
		row, err := y.Check(i, func(string) bool { return true }, start.Add(time.Minute), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		row.Province, row.ISP = "ZJ", "telecom"
		r.Observe(&row, "edge-"+string(rune('a'+i%3)))
	}
}

// TestGuardBreachAndHold: each guard holds for a candidate as good as
// stable and breaches for one worse than its bound, naming the guard.
func TestGuardBreachAndHold(t *testing.T) {
	good := [3]float64{0.001, 0.9, 40}
	tests := []struct {
		guard config.Guard
		worse [3]float64
	}{
		{config.Guard{Metric: config.GuardErrorRate, Delta: 0.002}, [3]float64{0.01, 0.9, 40}},
		{config.Guard{Metric: config.GuardHitRate, Delta: 0.01}, [3]float64{0.001, 0.8, 40}},
		{config.Guard{Metric: config.GuardTTFBP50, Delta: 0.1}, [3]float64{0.001, 0.9, 60}},
		{config.Guard{Metric: config.GuardTTFBP95, Delta: 0.15}, [3]float64{0.001, 0.9, 60}},
	}
	for _, tc := range tests {
		for _, bad := range []bool{false, true} {
			plan := &config.Plan{Steps: []float64{50, 100}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: []config.Guard{tc.guard}}
			r := pilotRollout(t, tc.guard.Metric+map[bool]string{true: "-bad", false: "-good"}[bad], plan)
			t0 := r.pilot.st.Since
			canary := good
			if bad {
				canary = tc.worse
			}
			feedRows(t, r, t0, good, canary)
			r.Cycle(t0.Add(2 * time.Minute))
			back, why := r.RolledBack()
			switch {
			case bad && (!back || !strings.Contains(why, "guard "+tc.guard.Metric)):
				t.Errorf("%s: a worse candidate: rolled back %v (%s), want a rollback naming the guard", tc.guard.Metric, back, why)
			case !bad && back:
				t.Errorf("%s: a candidate as good as stable rolled back: %s", tc.guard.Metric, why)
			case !bad && r.Percent() != 100:
				t.Errorf("%s: a good candidate: at %g%% after the dwell, want 100%%: %+v", tc.guard.Metric, r.Percent(), r.pilot.last)
			}
		}
	}
}

// TestGuardCross: the cross-province guard on the decisions' counts.
func TestGuardCross(t *testing.T) {
	for _, canaryCross := range []int{2, 20} {
		plan := &config.Plan{Steps: []float64{50, 100}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5,
			Guards: []config.Guard{{Metric: config.GuardCross, Delta: 0.02}}}
		r := pilotRollout(t, "cross-"+string(rune('0'+canaryCross)), plan)
		t0 := r.born
		for i := range 4000 {
			k := locate.KeyOf(netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 1}))
			in := r.Picks(k)
			pct := 2
			if in {
				pct = canaryCross
			}
			r.Count(in, true, i%100 >= pct, k, t0)
		}
		r.Cycle(r.pilot.st.Since.Add(2 * time.Minute))
		back, why := r.RolledBack()
		if want := canaryCross > 2; back != want {
			t.Errorf("Canary cross %d%% against 2%%: rolled back %v (%s), want %v", canaryCross, back, why, want)
		}
	}
}

// TestAutopilotWaitsForSamples: the dwell alone does not advance a step
// whose guards have too few samples.
func TestAutopilotWaitsForSamples(t *testing.T) {
	plan := &config.Plan{Steps: []float64{50, 100}, Dwell: time.Minute, MinSamples: 1e9, SourceShare: 0.5, Guards: config.DefaultGuards[:3]}
	r := pilotRollout(t, "waits", plan)
	t0 := r.pilot.st.Since
	feedRows(t, r, t0, [3]float64{0.001, 0.9, 40}, [3]float64{0.001, 0.9, 40})
	r.Cycle(t0.Add(time.Hour))
	if r.Percent() != 50 {
		t.Fatalf("Expected the step to wait for samples at 50%%, got %g%%", r.Percent())
	}
	if p := r.Pilot(t0.Add(time.Hour)); p.Guards[0].Verdict != Waiting || p.DwellLeft != "0s" {
		t.Errorf("Expected a waiting guard and no dwell left, got %+v", p)
	}
}

// TestAutopilotPauseResume: a paused autopilot does not advance; resumed,
// it starts again from the step at or below the share in force, with a
// new dwell; after a rollback it starts from the first step.
func TestAutopilotPauseResume(t *testing.T) {
	plan := &config.Plan{Steps: []float64{1, 5, 20, 100}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards[:1]}
	r := pilotRollout(t, "pause", plan)
	t0 := r.pilot.st.Since
	r.SetPercent(10)
	if !r.Pause("test", t0) || r.Pause("test", t0) {
		t.Fatal("Expected the first pause to pause and the second to do nothing")
	}
	feedRows(t, r, t0, [3]float64{0.001, 0.9, 40}, [3]float64{0.001, 0.9, 40})
	r.Cycle(t0.Add(time.Hour))
	if r.Percent() != 10 {
		t.Fatalf("Expected a paused autopilot to keep the share set by hand, 10%%, got %g%%", r.Percent())
	}
	t1 := t0.Add(2 * time.Hour)
	r.Resume("test", t1)
	if e := r.AutopilotEntry(); e.Step != 1 || !e.Since.Equal(t1) || e.Paused || r.Percent() != 5 {
		t.Fatalf("Expected to resume at step 1 (5%%) from now, got %+v at %g%%", e, r.Percent())
	}
	r.RollBack("a test")
	r.Cycle(t1)
	r.Resume("test", t1.Add(time.Minute))
	if back, _ := r.RolledBack(); back || r.Percent() != 1 || r.AutopilotEntry().Step != 0 {
		t.Fatalf("Expected a resume after a rollback to start again at 1%%, got %g%% (rolled back %v)", r.Percent(), back)
	}
	var actions []string
	for _, e := range r.AutopilotEntry().History {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, " "); got != "start pause resume rollback resume" {
		t.Errorf("Expected the history start pause resume rollback resume, got %s", got)
	}
}

// TestAutopilotRestored: a restart or a member's decision restores the
// step, its start and the history; the same step keeps its rows. A plan
// that changes is a new identity, so a reload with the same plan keeps
// the step and one with another starts afresh.
func TestAutopilotRestored(t *testing.T) {
	plan := &config.Plan{Steps: []float64{1, 5, 20}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards[:1]}
	r := pilotRollout(t, "restore", plan)
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &admin.CanaryEntry{Identity: r.Identity, Percent: 20, Autopilot: &admin.AutopilotEntry{Step: 2, Since: since,
		History: []admin.AutopilotEvent{{At: since, Action: ActionAdvance, Percent: 20}}}}
	r.RestoreAutopilot(e)
	if got := r.AutopilotEntry(); got.Step != 2 || !got.Since.Equal(since) || r.Percent() != 20 || len(got.History) != 1 {
		t.Fatalf("Expected step 2 at 20%% since %s, got %+v at %g%%", since, got, r.Percent())
	}
	feedRows(t, r, since, [3]float64{0.001, 0.9, 40}, [3]float64{0.001, 0.9, 40})
	r.RestoreAutopilot(e)
	if len(r.pilot.tally.sums) == 0 {
		t.Error("Expected the same step to keep its rows")
	}
	e.RolledBack, e.Reason = true, "guard x breached"
	r.RestoreAutopilot(e)
	if back, why := r.RolledBack(); !back || why != e.Reason || r.Percent() != 0 {
		t.Errorf("Expected the fleet's rollback applied, got %v %q at %g%%", back, why, r.Percent())
	}
	same := pilotRollout(t, "restore", plan)
	other := *plan
	other.Dwell = 2 * time.Minute
	changed := pilotRollout(t, "restore", &other)
	if same.Identity != r.Identity || changed.Identity == r.Identity {
		t.Errorf("Expected the same plan to keep the identity and another to change it")
	}
}

// TestSourceWeights: a source over the share weighs as if it held the
// share exactly; alone, it weighs fully.
func TestSourceWeights(t *testing.T) {
	w := sourceWeights(map[string]float64{"a": 900, "b": 100}, 1000, 0.5)
	if got := w["a"] * 900 / (w["a"]*900 + 100); got < 0.499 || got > 0.501 || w["b"] != 1 {
		t.Errorf("Expected a at half the weight and b full, got %v", w)
	}
	if w := sourceWeights(map[string]float64{"a": 900}, 900, 0.5); w["a"] != 1 {
		t.Errorf("Expected a lone source at full weight, got %v", w)
	}
}

// TestRestoreAutopilotKeepsRollback: a member's step decided before it saw
// this rollback does not undo it; an operator's resume since does.
func TestRestoreAutopilotKeepsRollback(t *testing.T) {
	plan := &config.Plan{Steps: []float64{1, 5, 20}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards[:1]}
	r := pilotRollout(t, "keeps-rollback", plan)
	t0 := r.pilot.st.Since
	r.RollBack("guard x breached")
	r.Cycle(t0.Add(time.Minute))
	advance := &admin.CanaryEntry{Identity: r.Identity, Percent: 5, Autopilot: &admin.AutopilotEntry{Step: 1, Since: t0.Add(time.Minute),
		History: []admin.AutopilotEvent{{At: t0, Action: ActionStart, Percent: 1}, {At: t0.Add(time.Minute), Action: ActionAdvance, Percent: 5}}}}
	if r.RestoreAutopilot(advance) {
		t.Fatal("Expected another member's advance not to undo the rollback")
	}
	if back, _ := r.RolledBack(); !back || r.Percent() != 0 {
		t.Fatalf("Expected the rollback kept, at %g%%", r.Percent())
	}
	resumed := *advance
	rp := *advance.Autopilot
	rp.Step, rp.History = 0, append(rp.History, admin.AutopilotEvent{At: t0.Add(2 * time.Minute), Action: ActionResume, Percent: 1, By: "ops"})
	resumed.Autopilot, resumed.Percent = &rp, 1
	if !r.RestoreAutopilot(&resumed) {
		t.Fatal("Expected an operator's resume to be taken")
	}
	if back, _ := r.RolledBack(); back || r.Percent() != 1 {
		t.Errorf("Expected the resume to clear the rollback at 1%%, got %v at %g%%", back, r.Percent())
	}
}

// TestCrossGuardTakesFleetCounts: in a fleet the cross guard judges the
// fleet's counts of the step; counts of another step are ignored.
func TestCrossGuardTakesFleetCounts(t *testing.T) {
	plan := &config.Plan{Steps: []float64{50, 100}, Dwell: time.Hour, MinSamples: 1000, SourceShare: 0.5,
		Guards: []config.Guard{{Metric: config.GuardCross, Delta: 0.02}}}
	r := pilotRollout(t, "fleet-cross", plan)
	since := r.StepSince()
	bad := [4]uint64{8000, 2000, 9800, 200} // canary 20% cross against 2%
	r.SetFleetCounts(since.Add(-time.Minute), bad)
	if r.Cycle(since.Add(time.Minute)); r.Percent() != 50 {
		t.Fatalf("Expected counts of another step ignored, at %g%%", r.Percent())
	}
	r.SetFleetCounts(since, bad)
	r.Cycle(since.Add(2 * time.Minute))
	if back, why := r.RolledBack(); !back || !strings.Contains(why, "guard cross +0.02 breached: canary 0.2000 (10000 decisions)") {
		t.Errorf("Expected the fleet's counts to roll back, got %v %q", back, why)
	}
}
