package canary

import (
	"math"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
)

// TestRowRatioVariance: the variance of a ratio counts rows as units:
// rows that agree have none, rows that disagree have the spread of
// their ratios.
func TestRowRatioVariance(t *testing.T) {
	// Two rows of 100 requests, 1 and 3 errors: ratio 2%.
	x, y := []float64{1, 3}, []float64{100, 100}
	var sx, sy, sx2, sxy, sy2 float64
	for i := range x {
		sx, sy, sx2, sxy, sy2 = sx+x[i], sy+y[i], sx2+x[i]*x[i], sxy+x[i]*y[i], sy2+y[i]*y[i]
	}
	r, v := rowRatio(sx, sy, sx2, sxy, sy2)
	// Σ(x − r·y)² / (Σy)² = (1 + 1) / 200².
	if math.Abs(r-0.02) > 1e-12 || math.Abs(v-2.0/40000) > 1e-15 {
		t.Errorf("Got ratio %g variance %g, want 0.02 and %g", r, v, 2.0/40000)
	}
	if r, v := rowRatio(2, 200, 2, 200, 20000); r != 0.01 || v != 0 {
		t.Errorf("Rows that agree: ratio %g variance %g, want 0.01 and 0", r, v)
	}
	if r, v := rowRatio(0, 0, 0, 0, 0); r != 0 || v != 0 {
		t.Errorf("No rows: %g %g", r, v)
	}
}

// TestJudgeSpendsAlpha: the same difference that breaches at the first
// look holds at a much later one, and with more places judged at once:
// each look's bound is wider, so that looking often does not add up to
// more false rollbacks.
func TestJudgeSpendsAlpha(t *testing.T) {
	plan := &config.Plan{Steps: []float64{1, 100}, MinSamples: 100, Guards: []config.Guard{{Metric: config.GuardErrorRate, Delta: 0.002}}}
	cohorts := func(canaryErrs float64) *[2]cohort {
		var c [2]cohort
		for i, e := range []float64{0.001, canaryErrs} {
			// 100 rows of 100 requests each, errors spread ±1 per row.
			for j := range 100 {
				n, x := 100.0, 100*e+float64(j%3-1)
				c[i].n, c[i].n2, c[i].e, c[i].en, c[i].e2 = c[i].n+n, c[i].n2+n*n, c[i].e+x, c[i].en+x*n, c[i].e2+x*x
			}
		}
		return &c
	}
	var first float64
	for e := 0.003; e < 0.02; e += 0.0001 {
		if judge(plan, map[place]*[2]cohort{{"ZJ", "telecom"}: cohorts(e)}, [4]uint64{}, 0, 1, 2)[0].Verdict == Breached {
			first = e
			break
		}
	}
	if first == 0 {
		t.Fatal("Expected some difference to breach at the first look")
	}
	if r := judge(plan, map[place]*[2]cohort{{"ZJ", "telecom"}: cohorts(first)}, [4]uint64{}, 0, 1000, 2)[0]; r.Verdict != Held {
		t.Errorf("Expected %g to hold at the 1000th look, got %+v", first, r)
	}
	many := map[place]*[2]cohort{}
	for i := range 50 {
		many[place{string(rune('A' + i)), "telecom"}] = cohorts(0.001)
	}
	many[place{"ZJ", "telecom"}] = cohorts(first)
	if r := judge(plan, many, [4]uint64{}, 0, 1, 2)[0]; r.Verdict != Held || r.Places != 51 {
		t.Errorf("Expected %g to hold among 51 places judged, got %+v", first, r)
	}
}

// TestAutopilotCompletesBelow100: a plan whose last step is below 100%
// completes once that step held for its dwell, and its guards still
// watch: a breach then rolls it back.
func TestAutopilotCompletesBelow100(t *testing.T) {
	plan := &config.Plan{Steps: []float64{20, 50}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards[2:3]}
	r := pilotRollout(t, "below100", plan)
	t0 := r.pilot.st.Since
	good := [3]float64{0.001, 0.9, 40}
	feedRows(t, r, t0, good, good)
	if !r.Cycle(t0.Add(2*time.Minute)) || r.Percent() != 50 {
		t.Fatalf("Expected to advance to 50%%, at %g%%", r.Percent())
	}
	t1 := r.pilot.st.Since
	feedRows(t, r, t1, good, good)
	r.Cycle(t1.Add(2 * time.Minute))
	if e := r.AutopilotEntry(); !e.Complete || r.Percent() != 50 {
		t.Fatalf("Expected complete at 50%%, got %+v at %g%%", e, r.Percent())
	}
	feedRows(t, r, t1.Add(3*time.Minute), good, [3]float64{0.05, 0.9, 40})
	r.Cycle(t1.Add(4 * time.Minute))
	if back, why := r.RolledBack(); !back {
		t.Errorf("Expected a breach after completion to roll back, got %v %s", back, why)
	}
}

// TestAutopilotNotesRollbackElsewhere: a rollback the query path or a
// member decided goes into the history once.
func TestAutopilotNotesRollbackElsewhere(t *testing.T) {
	plan := &config.Plan{Steps: []float64{1, 100}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards[:1]}
	r := pilotRollout(t, "elsewhere", plan)
	r.Apply("fleet-wide cross-province ratio")
	now := r.pilot.st.Since.Add(time.Minute)
	if !r.Cycle(now) || r.Cycle(now) {
		t.Fatal("Expected the first cycle after the rollback to note it, and the next to change nothing")
	}
	h := r.AutopilotEntry().History
	if last := h[len(h)-1]; last.Action != ActionRollback || last.Reason != "fleet-wide cross-province ratio" {
		t.Errorf("Expected the rollback in the history, got %+v", h)
	}
	if p := r.Pilot(now); len(p.Guards) != 1 || p.Guards[0].Verdict != Waiting || p.DwellLeft != "0s" {
		t.Errorf("Expected a waiting guard and no dwell left, got %+v", p)
	}
}

// TestTallyCumulative: the sums kept per bucket give, cumulated, what the
// rows' cumulative counts give directly, whatever the order of a row's
// buckets and with a bucket given twice.
func TestTallyCumulative(t *testing.T) {
	tl := newTally()
	k := tallyKey{place: place{"ZJ", "telecom"}, source: "s"}
	hists := [][][2]float64{{{90, 5}, {20, 10}, {20, 3}, {400, 2}}, {{5, 1}, {60, 30}}, {{1000, 7}}}
	var rowsA [][feed.NumBuckets]float64
	var totals []float64
	for i, h := range hists {
		n := 0.0
		for _, p := range h {
			n += p[1]
		}
		y := feed.RowJSON{Node: "n", Start: "2026-01-01T00:00:00Z", Seconds: 60, Client: "1.0.0.0/24", Requests: &n, TTFBHist: h}
		row, err := y.Check(i, func(string) bool { return true }, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tl.add(k, &row)
		var a [feed.NumBuckets]float64
		for _, p := range h {
			for b := feed.BucketOf(p[0]); b < feed.NumBuckets; b++ {
				a[b] += p[1]
			}
		}
		rowsA, totals = append(rowsA, a), append(totals, n)
	}
	s := tl.sums[k]
	for b := range feed.NumBuckets {
		var wa, wat, wa2 float64
		for i := range rowsA {
			wa, wat, wa2 = wa+rowsA[i][b], wat+rowsA[i][b]*totals[i], wa2+rowsA[i][b]*rowsA[i][b]
		}
		a, at, a2 := s.upTo(b)
		if math.Abs(a-wa) > 1e-9 || math.Abs(at-wat) > 1e-9 || math.Abs(a2-wa2) > 1e-9 {
			t.Fatalf("Bucket %d: %g %g %g, want %g %g %g", b, a, at, a2, wa, wat, wa2)
		}
	}
}

// TestForgerWeighsAtMostItsShare: a source that floods a cohort with
// forged 5xx weighs no more than source_share of it beside an honest
// one, so the cohort's ratio moves by at most that share of the forgery.
func TestForgerWeighsAtMostItsShare(t *testing.T) {
	tl := newTally()
	add := func(source string, rows int, errs float64) {
		for range rows {
			n, e := 100.0, 100*errs
			y := feed.RowJSON{Node: "n", Start: "2026-01-01T00:00:00Z", Seconds: 60, Client: "1.0.0.0/24", Requests: &n, Errors: e}
			row, err := y.Check(0, func(string) bool { return true }, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			tl.add(tallyKey{place: place{"ZJ", "telecom"}, canary: true, source: source}, &row)
		}
	}
	add("honest", 1000, 0.001)
	add("forger", 3000, 1)
	places, heaviest := tl.places(0.5)
	c := places[place{"ZJ", "telecom"}][1]
	r, _ := rowRatio(c.e, c.n, c.e2, c.en, c.n2)
	if want := 0.5*1 + 0.5*0.001; math.Abs(r-want) > 1e-9 || heaviest[1] != "forger" {
		t.Errorf("Expected the canary's 5xx ratio %g with the forger at half the weight, got %g (heaviest %q)", want, r, heaviest[1])
	}
}
