package canary

import (
	"fmt"
	"math"
	"sort"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
)

// Alpha bounds the chance that a release of a candidate no worse than
// stable rolls back at all: it is spent evenly over the plan's steps, and
// within a step over its looks (the k-th gets alpha/(k(k+1)), which sum to
// alpha), and at each look over the guards and places judged.
const Alpha = 0.01

// Guard verdicts.
const (
	Waiting  = "waiting"  // too few samples to judge
	Held     = "held"     // judged, and within its bound
	Breached = "breached" // worse than its bound, beyond doubt at this look
)

// GuardResult is one guard at one look: the place where it is closest to
// its bound, both cohorts' figures there and the verdict.
type GuardResult struct {
	Guard     string  `json:"guard"`
	Threshold float64 `json:"threshold"` // a fraction (ttfb), points/100 (errors, hits) or a ratio (cross)
	Verdict   string  `json:"verdict"`
	Place     string  `json:"place,omitempty"` // province/carrier of the worst place
	Canary    float64 `json:"canary"`          // ms for ttfb, a ratio otherwise
	Stable    float64 `json:"stable"`
	// Margin is how far inside its bound the guard is at this look (its
	// confidence bound against the threshold); below 0 it breached.
	Margin        float64 `json:"margin"`
	CanarySamples float64 `json:"canary_samples"`
	StableSamples float64 `json:"stable_samples"`
	Places        int     `json:"places"` // places judged
	// Pending is the places the step waits for: with at least
	// minPlaceShare of the canary's requests, and not min_samples yet.
	Pending []string `json:"pending,omitempty"`
}

// minPlaceShare is the part of the canary's requests from which a place
// holds its step until it is judged; smaller places are judged once they
// have the samples, without holding it.
const minPlaceShare = 0.02

// test is one guard in one place, before the look's z is known.
type test struct {
	place          string
	canary, stable float64
	nc, ns         float64
	margin         func(z float64) float64
}

// judge evaluates the plan's guards on the tally's places and the cross
// counts (canary same, cross, stable same, cross) at the look-th look of
// a step; steps is the plan's number of steps.
func judge(plan *config.Plan, places map[place]*[2]cohort, cross [4]uint64, crossMin uint64, look, steps int) []GuardResult {
	tests := make([][]test, len(plan.Guards))
	m := 0
	keys := make([]place, 0, len(places))
	for p := range places {
		keys = append(keys, p)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].Province < keys[j].Province || keys[i].Province == keys[j].Province && keys[i].ISP < keys[j].ISP
	})
	canaryTotal := 0.0
	for _, c := range places {
		canaryTotal += c[1].n
	}
	pending := make([][]string, len(plan.Guards))
	for i, g := range plan.Guards {
		if g.Metric == config.GuardCross {
			if t, ok := crossTest(g, cross, crossMin); ok {
				tests[i] = append(tests[i], t)
			}
		} else {
			for _, p := range keys {
				if t, ok := feedTest(g, p, places[p], plan.MinSamples); ok {
					tests[i] = append(tests[i], t)
				} else if places[p][1].n >= minPlaceShare*canaryTotal {
					pending[i] = append(pending[i], p.String())
				}
			}
		}
		m += len(tests[i])
	}
	z := 0.0
	if m > 0 {
		a := Alpha / float64(max(steps, 1)) / float64(look*(look+1)) / float64(m)
		z = math.Sqrt2 * math.Erfinv(1-2*a)
	}
	out := make([]GuardResult, len(plan.Guards))
	for i, g := range plan.Guards {
		r := GuardResult{Guard: g.Metric, Threshold: g.Delta, Verdict: Waiting, Places: len(tests[i]), Pending: pending[i]}
		for j, t := range tests[i] {
			mg := t.margin(z)
			if j == 0 || mg < r.Margin {
				r.Place, r.Canary, r.Stable, r.Margin, r.CanarySamples, r.StableSamples = t.place, t.canary, t.stable, mg, t.nc, t.ns
			}
		}
		switch {
		case len(tests[i]) > 0 && r.Margin < 0:
			r.Verdict = Breached
		case len(tests[i]) > 0 && len(pending[i]) == 0:
			r.Verdict = Held
		}
		out[i] = r
	}
	return out
}

func (p place) String() string {
	switch {
	case p.Province == "":
		return p.ISP
	case p.ISP == "":
		return p.Province
	}
	return p.Province + "/" + p.ISP
}

// feedTest is guard g in place p, when both cohorts have min samples.
func feedTest(g config.Guard, p place, c *[2]cohort, min float64) (test, bool) {
	s, k := &c[0], &c[1]
	switch g.Metric {
	case config.GuardErrorRate:
		if s.n < min || k.n < min {
			return test{}, false
		}
		return rateTest(p, [5]float64{s.e, s.n, s.e2, s.en, s.n2}, [5]float64{k.e, k.n, k.e2, k.en, k.n2}, g.Delta, 1), true
	case config.GuardHitRate:
		if s.hr < min || k.hr < min {
			return test{}, false
		}
		return rateTest(p, [5]float64{s.h, s.hr, s.h2, s.hhr, s.hr2}, [5]float64{k.h, k.hr, k.h2, k.hhr, k.hr2}, g.Delta, -1), true
	case config.GuardTTFBP50, config.GuardTTFBP95:
		if s.t < min || k.t < min {
			return test{}, false
		}
		q := 0.5
		if g.Metric == config.GuardTTFBP95 {
			q = 0.95
		}
		qs, qc := s.hist.Quantile(q), k.hist.Quantile(q)
		// The canary's q-quantile is above (1+delta) times stable's when
		// fewer than q of its requests are at most that; judged at the
		// bucket holding it, which errs towards holding by at most a
		// bucket (10%).
		b := feed.BucketOf((1 + g.Delta) * qs)
		a, at, a2 := k.upTo(b)
		f, v := rowRatio(a, k.t, a2, at, k.t2)
		se := math.Sqrt(v)
		return test{place: p.String(), canary: qc, stable: qs, nc: k.t, ns: s.t,
			margin: func(z float64) float64 { return f + z*se - q }}, true
	}
	return test{}, false
}

// rateTest compares the cohorts' ratios X/Y (each as ΣX, ΣY, ΣX², ΣXY,
// ΣY²): sign 1 when higher is worse, -1 when lower is.
func rateTest(p place, stable, canary [5]float64, delta, sign float64) test {
	rs, vs := rowRatio(stable[0], stable[1], stable[2], stable[3], stable[4])
	rc, vc := rowRatio(canary[0], canary[1], canary[2], canary[3], canary[4])
	se := math.Sqrt(vs + vc)
	return test{place: p.String(), canary: rc, stable: rs, nc: canary[1], ns: stable[1],
		margin: func(z float64) float64 { return delta - (sign*(rc-rs) - z*se) }}
}

// crossTest is the cross-province guard on the decisions' counts.
func crossTest(g config.Guard, c [4]uint64, min uint64) (test, bool) {
	nc, ns := c[0]+c[1], c[2]+c[3]
	if nc < min || ns < min || nc == 0 || ns == 0 {
		return test{}, false
	}
	rc, rs := float64(c[1])/float64(nc), float64(c[3])/float64(ns)
	se := math.Sqrt(rc*(1-rc)/float64(nc) + rs*(1-rs)/float64(ns))
	return test{canary: rc, stable: rs, nc: float64(nc), ns: float64(ns),
		margin: func(z float64) float64 { return g.Delta - (rc - rs - z*se) }}, true
}

// describe is a breached guard as a rollback's reason.
func (r *GuardResult) describe() string {
	where := ""
	if r.Place != "" {
		where = " in " + r.Place
	}
	switch r.Guard {
	case config.GuardTTFBP50, config.GuardTTFBP95:
		return fmt.Sprintf("guard %s +%g%% breached%s: canary %.1f ms (%.0f samples) against stable %.1f ms (%.0f samples)",
			r.Guard, r.Threshold*100, where, r.Canary, r.CanarySamples, r.Stable, r.StableSamples)
	case config.GuardCross:
		return fmt.Sprintf("guard cross +%g breached: canary %.4f (%.0f decisions) against stable %.4f (%.0f decisions)",
			r.Threshold, r.Canary, r.CanarySamples, r.Stable, r.StableSamples)
	}
	sign := "+"
	if r.Guard == config.GuardHitRate {
		sign = "-"
	}
	return fmt.Sprintf("guard %s %s%g breached%s: canary %.3f%% (%.0f requests) against stable %.3f%% (%.0f requests)",
		r.Guard, sign, r.Threshold*100, where, r.Canary*100, r.CanarySamples, r.Stable*100, r.StableSamples)
}
