package feed

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHistQuantilesMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a, b, all Hist
	var values []float64
	for i := range 20000 {
		v := 5 + r.ExpFloat64()*40
		values = append(values, v)
		h := &a
		if i%2 == 1 {
			h = &b
		}
		h[BucketOf(v)]++
		all[BucketOf(v)]++
	}
	a.Add(&b)
	if a != all {
		t.Fatalf("Two halves merged differ from the whole")
	}
	for _, q := range []float64{0.5, 0.95} {
		got := a.Quantile(q)
		want := exactQuantile(values, q)
		if math.Abs(got-want)/want > 0.1 {
			t.Errorf("Quantile %.2f = %.1f ms, want %.1f within 10%%", q, got, want)
		}
	}
	var empty Hist
	if empty.Quantile(0.5) != 0 || BucketOf(0) != 0 || BucketOf(1e9) != NumBuckets-1 {
		t.Errorf("Empty or out-of-range histograms misbehave")
	}
}

func exactQuantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func TestQuantileRowsReadBack(t *testing.T) {
	var h Hist
	h.addQuantiles(1000, 20, 80)
	p50, p95 := h.Quantile(0.5), h.Quantile(0.95)
	if p50 < 18 || p50 > 22 || p95 < 72 || p95 > 88 {
		t.Errorf("p50 %.1f, p95 %.1f from a row of 20 and 80 ms: want them within a bucket", p50, p95)
	}
}
