package canary

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/locate"
)

// pilot is a rollout's autopilot: the plan's step, the rows of the step
// and the last look at the guards.
type pilot struct {
	plan *config.Plan
	mu   sync.Mutex
	st   admin.AutopilotEntry
	// Of the current step only: its rows, its looks and the decisions'
	// counts at its start (for the cross guard).
	tally     *tally
	looks     int
	crossBase [4]uint64
	// fleetCross is the fleet's counts of the step's decisions, when a
	// fleet adds them up (control's report loop); nil: this member's.
	fleetCross *[4]uint64
	last       []GuardResult
	lastAt     time.Time
}

// Actions of the history.
const (
	ActionStart    = "start"
	ActionAdvance  = "advance"
	ActionComplete = "complete"
	ActionRollback = "rollback"
	ActionPause    = "pause"
	ActionResume   = "resume"
)

func newPilot(plan *config.Plan, now time.Time) *pilot {
	p := &pilot{plan: plan, tally: newTally()}
	// Not counted: every load of the Corefile builds one, and most take
	// up the saved step at once.
	p.st = admin.AutopilotEntry{Since: now.UTC(), History: []admin.AutopilotEvent{{At: now.UTC(), Action: ActionStart, Percent: plan.Steps[0]}}}
	return p
}

// note adds an event to the history, dropping the oldest past the bound.
// Callers hold p.mu, or own p alone.
func (p *pilot) note(e admin.AutopilotEvent) {
	h := append(slices.Clone(p.st.History), e)
	if n := len(h) - admin.MaxAutopilotHistory; n > 0 {
		h = h[n:]
	}
	p.st.History = h
	transitions.WithLabelValues(e.Action).Inc()
}

// startStep makes step i the current one from now. Callers hold p.mu.
func (r *Rollout) startStep(p *pilot, i int, now time.Time) {
	p.st.Step, p.st.Since = i, now.UTC()
	p.tally, p.looks, p.last, p.fleetCross = newTally(), 0, nil, nil
	p.crossBase = r.Counts()
	r.share.Store(PercentToShare(p.plan.Steps[i]))
	stepGauge.Set(p.plan.Steps[i])
}

// Observe counts one feed row for the current step's cohorts: its client
// network is in the canary or in stable by the same salted hash the
// queries are decided by. A row whose window began before the step is
// left out: its clients may have been in the other cohort then.
func (r *Rollout) Observe(row *feed.Row, source string) {
	p := r.pilot
	if p == nil || !row.Client.IsValid() {
		return
	}
	p.mu.Lock()
	t, since, live := p.tally, p.st.Since, !p.st.Paused && !r.rolledBack.Load()
	p.mu.Unlock()
	if !live || row.Start.Before(since) {
		return
	}
	k := tallyKey{place: place{row.Province, row.ISP}, canary: r.Picks(locate.KeyOf(row.Client.Addr())), source: source}
	t.add(k, row)
}

// Cycle looks at the guards once, at now: a breached guard rolls the
// canary back to 0%; a step whose guards all held for the dwell advances
// to the next; the last one holds and says it is complete. It reports
// whether the state changed (the caller saves and shares it).
func (r *Rollout) Cycle(now time.Time) bool {
	p := r.pilot
	if p == nil {
		return false
	}
	r.checkMu.Lock()
	defer r.checkMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	back, reason := r.RolledBack()
	if back {
		// Rolled back elsewhere (the query path's rollback_cross, a
		// member): the history says so once.
		if n := len(p.st.History); n == 0 || p.st.History[n-1].Action != ActionRollback {
			p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionRollback, Reason: reason})
			stepGauge.Set(0)
			return true
		}
		return false
	}
	steps := p.plan.Steps
	percent := steps[p.st.Step]
	places, heaviest := p.tally.places(p.plan.SourceShare)
	cross := r.Counts()
	for i := range cross {
		cross[i] -= min(cross[i], p.crossBase[i])
	}
	if p.fleetCross != nil {
		cross = *p.fleetCross
	}
	judged := percent < 100 // at 100% there is no stable cohort to compare with
	if judged {
		p.looks++
		p.last = judge(p.plan, places, cross, r.Opts.RollbackMin, p.looks, len(steps))
		p.lastAt = now
		setMargins(p.last)
	}
	if p.st.Paused {
		return false
	}
	for i := range p.last {
		if g := &p.last[i]; judged && g.Verdict == Breached {
			why := g.describe() + " at " + formatPercent(percent) + "; the heaviest sources: canary " + heaviest[1] + ", stable " + heaviest[0]
			r.rollBack(why)
			rolledBackGauge.Set(1)
			stepGauge.Set(0)
			p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionRollback, Percent: percent, Reason: why})
			log.Warningf("Canary %s rolled back to 0%% from %s: %s", r.Opts.File, formatPercent(percent), why)
			return true
		}
	}
	if p.st.Complete || now.Sub(p.st.Since) < p.plan.Dwell {
		return false
	}
	for i := range p.last {
		if p.last[i].Verdict != Held {
			return false // the step waits for samples
		}
	}
	if p.st.Step == len(steps)-1 {
		r.complete(p, percent, now)
		return true
	}
	r.advance(p, now)
	return true
}

// advance moves to the next step; at a last step of 100% the plan is
// complete at once. Callers hold p.mu.
func (r *Rollout) advance(p *pilot, now time.Time) {
	next := p.st.Step + 1
	r.startStep(p, next, now)
	percent := p.plan.Steps[next]
	p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionAdvance, Percent: percent})
	log.Infof("Canary %s: every guard held for %s: advanced to %s of the subnets (step %d of %d)",
		r.Opts.File, p.plan.Dwell, formatPercent(percent), next+1, len(p.plan.Steps))
	if next == len(p.plan.Steps)-1 && percent == 100 {
		r.complete(p, percent, now)
	}
}

// complete holds the plan at its last step. Callers hold p.mu.
func (r *Rollout) complete(p *pilot, percent float64, now time.Time) {
	p.st.Complete = true
	p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionComplete, Percent: percent})
	log.Infof("Canary %s: complete at %s: promote it by copying it over the node table", r.Opts.File, formatPercent(percent))
}

// SetFleetCounts gives the cross guard the fleet's counts of the step's
// decisions (canary same, cross, stable same, cross), which a fleet adds
// up from the step's start; since is the step they were counted in, and
// counts of another step are ignored.
func (r *Rollout) SetFleetCounts(since time.Time, c [4]uint64) {
	if p := r.pilot; p != nil {
		p.mu.Lock()
		if p.st.Since.Equal(since) {
			p.fleetCross = &c
		}
		p.mu.Unlock()
	}
}

// StepSince is the start of the autopilot's step; zero without a plan.
func (r *Rollout) StepSince() time.Time {
	if p := r.pilot; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.st.Since
	}
	return time.Time{}
}

// Pause stops the autopilot where it is (a share set by hand pauses it);
// false when it was paused already or there is no plan.
func (r *Rollout) Pause(by string, now time.Time) bool {
	p := r.pilot
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st.Paused {
		return false
	}
	p.st.Paused = true
	p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionPause, Percent: r.Percent(), By: by})
	stepGauge.Set(r.Percent())
	return true
}

// Resume starts the autopilot again: from the step at or below the share
// in force, with a new dwell; after a rollback, from the first step.
func (r *Rollout) Resume(by string, now time.Time) bool {
	p := r.pilot
	if p == nil {
		return false
	}
	if back, _ := r.RolledBack(); back {
		r.SetPercent(p.plan.Steps[0]) // clears the rollback and its counts
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := 0
	for j, s := range p.plan.Steps {
		if PercentToShare(s) <= r.share.Load() {
			i = j
		}
	}
	p.st.Paused, p.st.Complete = false, false
	r.startStep(p, i, now)
	p.note(admin.AutopilotEvent{At: now.UTC(), Action: ActionResume, Percent: p.plan.Steps[i], By: by})
	if i == len(p.plan.Steps)-1 && p.plan.Steps[i] == 100 {
		p.st.Complete = true
	}
	return true
}

// AutopilotEntry is the autopilot's state to save; nil without a plan.
func (r *Rollout) AutopilotEntry() *admin.AutopilotEntry {
	p := r.pilot
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.st
	e.History = slices.Clone(e.History)
	return &e
}

// RestoreAutopilot takes the autopilot's state a state file or the fleet
// holds: its step, the step's start and the history. The step's rows are
// kept when it is the same step. It reports false, and takes nothing,
// for a state that would undo this rollout's rollback without an
// operator's pause or resume since: another member's step decided before
// it saw the rollback. The caller shares the rollback again.
func (r *Rollout) RestoreAutopilot(e *admin.CanaryEntry) bool {
	p := r.pilot
	if p == nil || e.Autopilot == nil || e.Autopilot.Step >= len(p.plan.Steps) {
		return true
	}
	back, _ := r.RolledBack()
	switch {
	case back && !e.RolledBack && !p.operatorSince(e.Autopilot.History):
		return false
	case e.RolledBack && !back:
		r.rollBack(e.Reason)
	case !e.RolledBack && back:
		r.SetPercent(e.Percent)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	same := p.st.Step == e.Autopilot.Step && p.st.Since.Equal(e.Autopilot.Since)
	st := *e.Autopilot
	st.History = slices.Clone(st.History)
	p.st = st
	if !same {
		p.tally, p.looks, p.last, p.fleetCross = newTally(), 0, nil, nil
		p.crossBase = r.Counts()
	}
	switch {
	case e.RolledBack:
		stepGauge.Set(0)
	case st.Paused:
		r.share.Store(PercentToShare(e.Percent))
		stepGauge.Set(e.Percent)
	default:
		r.share.Store(PercentToShare(p.plan.Steps[st.Step]))
		stepGauge.Set(p.plan.Steps[st.Step])
	}
	return true
}

// operatorSince reports whether history has a pause or resume (an
// operator's) at or after this rollout's last rollback.
func (p *pilot) operatorSince(history []admin.AutopilotEvent) bool {
	p.mu.Lock()
	var back time.Time
	for _, e := range p.st.History {
		if e.Action == ActionRollback {
			back = e.At
		}
	}
	p.mu.Unlock()
	for _, e := range history {
		if (e.Action == ActionPause || e.Action == ActionResume) && !e.At.Before(back) {
			return true
		}
	}
	return false
}

// PilotJSON is the autopilot as GET /v1/canary shows it.
type PilotJSON struct {
	Steps      []float64              `json:"steps"`
	Dwell      string                 `json:"dwell"`
	Step       int                    `json:"step"` // from 0
	Percent    float64                `json:"step_percent"`
	Since      time.Time              `json:"since"`
	DwellLeft  string                 `json:"dwell_left"`
	Paused     bool                   `json:"paused"`
	Complete   bool                   `json:"complete"`
	MinSamples float64                `json:"min_samples"`
	Looked     time.Time              `json:"looked,omitzero"`
	Guards     []GuardResult          `json:"guards"`
	History    []admin.AutopilotEvent `json:"history"`
}

// Pilot is the autopilot's state at now; nil without a plan.
func (r *Rollout) Pilot(now time.Time) *PilotJSON {
	p := r.pilot
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	left := max(p.plan.Dwell-now.Sub(p.st.Since), 0).Round(time.Second)
	out := &PilotJSON{Steps: p.plan.Steps, Dwell: p.plan.Dwell.String(), Step: p.st.Step, Percent: p.plan.Steps[p.st.Step],
		Since: p.st.Since, DwellLeft: left.String(), Paused: p.st.Paused, Complete: p.st.Complete, MinSamples: p.plan.MinSamples,
		Looked: p.lastAt, Guards: slices.Clone(p.last), History: slices.Clone(p.st.History)}
	if out.Guards == nil {
		out.Guards = []GuardResult{}
		for _, g := range p.plan.Guards {
			out.Guards = append(out.Guards, GuardResult{Guard: g.Metric, Threshold: g.Delta, Verdict: Waiting})
		}
	}
	if out.History == nil {
		out.History = []admin.AutopilotEvent{}
	}
	return out
}

func formatPercent(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) + "%" }
