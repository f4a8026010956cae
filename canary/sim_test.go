package canary

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/table"
)

// The simulation: client /24s in a few places, each served by its place's
// node, each sending rows every cycle (a virtual minute) through the
// feed's own row check and histogram, into the rollout's autopilot.

// simPlaces are the places of the simulated clients: province, carrier,
// the stable node's TTFB p50 (ms), 5xx ratio and hit ratio.
var simPlaces = []struct {
	province, isp  string
	p50, errs, hit float64
}{
	{"ZJ", "telecom", 38, 0.002, 0.92},
	{"ZJ", "unicom", 55, 0.003, 0.90},
	{"BJ", "unicom", 42, 0.001, 0.93},
	{"GD", "mobile", 70, 0.004, 0.88},
}

// badCandidate is what a candidate does worse: for clients of place 0
// only, extra 5xx and extra TTFB.
type badCandidate struct {
	errs float64 // added 5xx ratio
	ms   float64 // added TTFB
}

type sim struct {
	rng      *rand.Rand
	nets     []netip.Prefix // the population
	place    []int
	rate     []float64 // requests per minute
	watched  []int     // the networks whose edges' rows the test sends
	plan     *config.Plan
	bad      badCandidate
	maxShare float64 // the largest share seen, percent
}

const simNets = 20000

func newSim(seed uint64, plan *config.Plan, bad badCandidate) *sim {
	s := &sim{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), plan: plan, bad: bad}
	for i := range simNets {
		s.nets = append(s.nets, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0}), 24))
		s.place = append(s.place, i%len(simPlaces))
		s.rate = append(s.rate, 50+100*s.rng.Float64())
	}
	return s
}

// run releases one candidate under salt from t0 until it completes or
// rolls back or maxCycles pass; it returns the rollout and the cycles run.
func (s *sim) run(t *testing.T, salt string, t0 time.Time, maxCycles int, each func(cycle int, r *Rollout)) (*Rollout, int) {
	// A file of its own: a rolled-back identity stays rolled back for
	// the process.
	r := New(config.Canary{File: "candidate-" + salt + ".yaml", RollbackCross: -1, RollbackMin: 1000, Window: time.Minute, Plan: s.plan, Percent: s.plan.Steps[0]},
		&table.Table{}, KeysOf(salt))
	r.pilot.st.Since = t0
	// Watched: every network in the canary at the first step, and 2000
	// of the others: the stable cohort is sampled, alike at every step.
	s.watched = s.watched[:0]
	for i, n := range s.nets {
		if r.Picks(locate.KeyOf(n.Addr())) || s.rng.IntN(simNets) < 2000 {
			s.watched = append(s.watched, i)
		}
	}
	known := func(string) bool { return true }
	for c := range maxCycles {
		start := t0.Add(time.Duration(c) * time.Minute)
		end := start.Add(time.Minute)
		s.maxShare = max(s.maxShare, r.Percent())
		// Noise every place's node shares in a minute: ±20% on the TTFB,
		// on the 5xx ratio, and a couple of points on the hits.
		noise := make([][3]float64, len(simPlaces))
		for i := range noise {
			noise[i] = [3]float64{1 + 0.4*(s.rng.Float64()-0.5), 1 + 0.4*(s.rng.Float64()-0.5), 0.04 * (s.rng.Float64() - 0.5)}
		}
		for _, i := range s.watched {
			p, in := s.place[i], r.Picks(locate.KeyOf(s.nets[i].Addr()))
			sp := simPlaces[p]
			errs, ms := sp.errs*noise[p][1], sp.p50*noise[p][0]*math.Exp(0.1*s.rng.NormFloat64())
			node := fmt.Sprintf("%s-%s-1", sp.province, sp.isp)
			if in && p == 0 && (s.bad.errs > 0 || s.bad.ms > 0) {
				errs, ms, node = errs+s.bad.errs, ms+s.bad.ms, "bad-node"
			}
			n := float64(poisson(s.rng, s.rate[i]))
			e := float64(binomial(s.rng, n, errs))
			h := float64(binomial(s.rng, n, min(max(sp.hit+noise[p][2], 0), 1)))
			p95 := ms * 3
			y := feed.RowJSON{Node: node, Start: start.Format(time.RFC3339Nano), Seconds: 60, Client: s.nets[i].String(),
				Requests: &n, Errors: e, Hits: &h, TTFBP50: &ms, TTFBP95: &p95}
			row, err := y.Check(0, known, end, 10*time.Minute)
			if err != nil {
				t.Fatalf("Row: %v", err)
			}
			row.Province, row.ISP = sp.province, sp.isp // as the feed's locator places it
			r.Observe(&row, "edge-"+node)
		}
		r.Cycle(end)
		if each != nil {
			each(c, r)
		}
		if back, _ := r.RolledBack(); back {
			return r, c + 1
		}
		if e := r.AutopilotEntry(); e.Complete {
			return r, c + 1
		}
	}
	return r, maxCycles
}

func poisson(rng *rand.Rand, mean float64) int {
	// A normal approximation: the means are in the tens and hundreds.
	return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
}

func binomial(rng *rand.Rand, n, p float64) int {
	if n <= 0 || p <= 0 {
		return 0
	}
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	if mean < 20 {
		k := 0
		for range int(n) {
			if rng.Float64() < p {
				k++
			}
		}
		return k
	}
	return min(int(n), max(0, int(math.Round(mean+sd*rng.NormFloat64()))))
}

func simPlan() *config.Plan {
	return &config.Plan{Steps: []float64{1, 5, 20, 50, 100}, Dwell: 5 * time.Minute, MinSamples: config.DefaultMinSamples,
		SourceShare: config.DefaultSourceShare,
		Guards: []config.Guard{{Metric: config.GuardTTFBP50, Delta: 0.10}, {Metric: config.GuardTTFBP95, Delta: 0.15},
			{Metric: config.GuardErrorRate, Delta: 0.002}, {Metric: config.GuardHitRate, Delta: 0.01}}}
}

// TestAutopilotAA: 100 releases of a candidate that decides as stable
// does, with noise in every row: at most one rolls back, and every other
// completes in its five steps.
func TestAutopilotAA(t *testing.T) {
	s := newSim(1, simPlan(), badCandidate{})
	t0 := time.Now().Truncate(time.Minute)
	rolledBack, worst := 0, math.Inf(1)
	for rel := range 100 {
		steps := 0
		r, cycles := s.run(t, fmt.Sprintf("release %03d salt 0123456789", rel), t0, 200, func(_ int, r *Rollout) {
			for _, g := range r.pilot.last {
				if g.Verdict != Waiting {
					worst = min(worst, g.Margin)
				}
			}
		})
		e := r.AutopilotEntry()
		for _, ev := range e.History {
			if ev.Action == ActionAdvance {
				steps++
			}
		}
		if back, why := r.RolledBack(); back {
			rolledBack++
			t.Logf("Release %d rolled back after %d cycles: %s", rel, cycles, why)
			continue
		}
		if !e.Complete || steps != 4 {
			t.Errorf("Release %d: complete %v after %d advances and %d cycles, want complete after 4", rel, e.Complete, steps, cycles)
		}
	}
	t.Logf("%d of 100 releases rolled back; the smallest guard margin seen: %.4f", rolledBack, worst)
	if rolledBack > 1 {
		t.Errorf("Expected at most 1 of 100 A/A releases rolled back, got %d", rolledBack)
	}
}

// TestAutopilotCatchesBadCandidate: a candidate that sends one place's
// clients to a node with +0.5 points of 5xx, or +50 ms of TTFB, rolls back
// at the 1% step within two cycles of its cohorts having min_samples
// there, and never went above 1%.
func TestAutopilotCatchesBadCandidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bad   badCandidate
		guard string
	}{
		{"errors", badCandidate{errs: 0.005}, config.GuardErrorRate},
		{"ttfb", badCandidate{ms: 50}, config.GuardTTFBP50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for rel := range 5 {
				s := newSim(uint64(100+rel), simPlan(), tc.bad)
				enough := -1
				r, cycles := s.run(t, fmt.Sprintf("bad %s %d salt 0123456789", tc.name, rel), time.Now().Truncate(time.Minute), 60, func(c int, r *Rollout) {
					if enough >= 0 {
						return
					}
					places, _ := r.pilot.tally.places(1)
					if k := places[place{"ZJ", "telecom"}]; k != nil && k[1].n >= s.plan.MinSamples && k[0].n >= s.plan.MinSamples {
						enough = c
					}
				})
				back, why := r.RolledBack()
				if !back {
					t.Fatalf("Release %d: not rolled back after %d cycles", rel, cycles)
				}
				if s.maxShare > 1 {
					t.Errorf("Release %d: the share reached %g%%, want at most 1%%", rel, s.maxShare)
				}
				if late := cycles - 1 - enough; enough < 0 || late > 1 {
					t.Errorf("Release %d: rolled back at cycle %d, enough samples at cycle %d: want within two cycles", rel, cycles-1, enough)
				}
				if !strings.Contains(why, "guard "+tc.guard) || !strings.Contains(why, "ZJ/telecom") || !strings.Contains(why, "at 1%") {
					t.Errorf("Release %d: reason %q does not name the guard, the place and the step", rel, why)
				}
				if rel == 0 {
					t.Logf("Rolled back at cycle %d (enough samples at %d): %s", cycles-1, enough, why)
				}
			}
		})
	}
}
