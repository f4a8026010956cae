package canary

import (
	"slices"
	"sync"

	"github.com/gslbdns/gslb/feed"
)

// A tally is what the feed's rows say of each cohort in one step: per
// place, cohort and source, the sums the guards compare. Rows are the
// units of the variance (one client network's window), so that noise
// shared by a network's requests widens the bound instead of passing as
// signal.
type tally struct {
	mu   sync.Mutex
	sums map[tallyKey]*sums
}

type tallyKey struct {
	place  place
	canary bool
	source string
}

type place struct{ Province, ISP string }

// sums of one (place, cohort, source): for a ratio X/Y over rows, ΣY, ΣY²,
// ΣX, ΣXY and ΣX² give the ratio and its variance.
type sums struct {
	rows       float64
	n, n2      float64 // requests
	e, en, e2  float64 // 5xx against requests
	hr, hr2    float64 // requests of rows that said their hits
	h, hhr, h2 float64 // hits against those requests
	t, t2      float64 // the TTFB histogram's total
	// A row's share of requests at most bucket k's bound is A_k/t, with
	// A_k its cumulative count. hist holds ΣA's steps, histT ΣA·t's and
	// d2 ΣA²'s: each changes only at the row's buckets, so a row costs
	// its few buckets, and the sums are cumulated when judged.
	hist, histT, d2 feed.Hist
}

func newTally() *tally { return &tally{sums: map[tallyKey]*sums{}} }

// add counts one row of a cohort.
func (t *tally) add(k tallyKey, r *feed.Row) {
	var buf [feed.NumBuckets]bucket
	bs := buf[:0]
	total := 0.0
	r.Buckets(func(k int, n float64) {
		if n > 0 && len(bs) < len(buf) {
			bs = append(bs, bucket{k, n})
			total += n
		}
	})
	slices.SortFunc(bs, func(a, b bucket) int { return a.k - b.k })
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sums[k]
	if s == nil {
		s = &sums{}
		t.sums[k] = s
	}
	s.rows++
	s.n += r.Requests
	s.n2 += r.Requests * r.Requests
	s.e += r.Errors
	s.en += r.Errors * r.Requests
	s.e2 += r.Errors * r.Errors
	if r.HasHits {
		s.hr += r.Requests
		s.hr2 += r.Requests * r.Requests
		s.h += r.Hits
		s.hhr += r.Hits * r.Requests
		s.h2 += r.Hits * r.Hits
	}
	if total <= 0 {
		return
	}
	s.t += total
	s.t2 += total * total
	cum := 0.0
	for _, b := range bs {
		s.hist[b.k] += b.n
		s.histT[b.k] += b.n * total
		s.d2[b.k] += (cum+b.n)*(cum+b.n) - cum*cum
		cum += b.n
	}
}

type bucket struct {
	k int
	n float64
}

// upTo is, over the rows, ΣA, ΣA·t and ΣA² at bucket k.
func (s *sums) upTo(k int) (a, at, a2 float64) {
	for j := 0; j <= k; j++ {
		a, at, a2 = a+s.hist[j], at+s.histT[j], a2+s.d2[j]
	}
	return a, at, a2
}

// cohort is one cohort's sums in one place, each source's weighed.
type cohort struct{ sums }

// addWeighted adds a source's sums with weight w: first powers by w,
// second powers by w².
func (c *cohort) addWeighted(s *sums, w float64) {
	w2 := w * w
	c.rows += s.rows
	c.n += w * s.n
	c.n2 += w2 * s.n2
	c.e += w * s.e
	c.en += w2 * s.en
	c.e2 += w2 * s.e2
	c.hr += w * s.hr
	c.hr2 += w2 * s.hr2
	c.h += w * s.h
	c.hhr += w2 * s.hhr
	c.h2 += w2 * s.h2
	c.t += w * s.t
	c.t2 += w2 * s.t2
	for k := range s.hist {
		c.hist[k] += w * s.hist[k]
		c.histT[k] += w2 * s.histT[k]
		c.d2[k] += w2 * s.d2[k]
	}
}

// rowRatio is X/Y and its variance over rows: Σ(X−RY)²/(ΣY)².
func rowRatio(x, y, x2, xy, y2 float64) (r, v float64) {
	if y <= 0 {
		return 0, 0
	}
	r = x / y
	v = max(x2-2*r*xy+r*r*y2, 0) / (y * y)
	return r, v
}

// places is the tally's cohorts per place, each source weighing at most
// share of its cohort's requests when more than one source reports on
// it; and the heaviest source of each cohort.
func (t *tally) places(share float64) (map[place]*[2]cohort, [2]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var bySource [2]map[string]float64
	var total [2]float64
	for i := range bySource {
		bySource[i] = map[string]float64{}
	}
	for k, s := range t.sums {
		i := cohortIndex(k.canary)
		bySource[i][k.source] += s.n
		total[i] += s.n
	}
	var weights [2]map[string]float64
	var heaviest [2]string
	for i := range weights {
		weights[i] = sourceWeights(bySource[i], total[i], share)
		most := -1.0
		for src, n := range bySource[i] {
			if n > most || n == most && src < heaviest[i] {
				most, heaviest[i] = n, src
			}
		}
	}
	out := map[place]*[2]cohort{}
	for k, s := range t.sums {
		c := out[k.place]
		if c == nil {
			c = &[2]cohort{}
			out[k.place] = c
		}
		i := cohortIndex(k.canary)
		c[i].addWeighted(s, weights[i][k.source])
	}
	return out, heaviest
}

func cohortIndex(canary bool) int {
	if canary {
		return 1
	}
	return 0
}

// sourceWeights caps each source at share of the cohort's requests: a
// source above it weighs as if it held exactly share beside the others.
// One source alone weighs fully: there is nothing to weigh it against.
func sourceWeights(bySource map[string]float64, total, share float64) map[string]float64 {
	w := make(map[string]float64, len(bySource))
	for src, n := range bySource {
		w[src] = 1
		if others := total - n; len(bySource) > 1 && share < 1 && n > share*total && n > 0 {
			w[src] = share * others / ((1 - share) * n)
		}
	}
	return w
}
