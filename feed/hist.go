package feed

import "math"

// A Hist is a TTFB histogram on fixed log-spaced buckets: histograms of
// different edges, windows and nodes add up, so a cell's quantiles are
// those of all the requests it holds, not an average of averages.
type Hist [NumBuckets]float64

// Histogram buckets: bucket k holds TTFBs in (Bound(k-1), Bound(k)]
// milliseconds, Bound(k) = 1.1^k; the first holds everything up to 1 ms,
// the last everything above ~55 s.
const (
	NumBuckets   = 116
	bucketFactor = 1.1
)

var logFactor = math.Log(bucketFactor)

// Bound is bucket k's upper bound in milliseconds.
func Bound(k int) float64 { return math.Pow(bucketFactor, float64(k)) }

// BucketOf is the bucket of a TTFB of ms milliseconds.
func BucketOf(ms float64) int {
	if ms <= 1 {
		return 0
	}
	k := int(math.Ceil(math.Log(ms)/logFactor - 1e-9))
	return min(k, NumBuckets-1)
}

// Add adds o's counts to h.
func (h *Hist) Add(o *Hist) {
	for k := range h {
		h[k] += o[k]
	}
}

// Scale multiplies every count by f: a half-life's decay.
func (h *Hist) Scale(f float64) {
	for k := range h {
		h[k] *= f
	}
}

// Total is the number of requests h holds.
func (h *Hist) Total() float64 {
	t := 0.0
	for _, c := range h {
		t += c
	}
	return t
}

// Quantile is the q quantile (0..1) in milliseconds, interpolated within
// its bucket on the log scale; 0 for an empty histogram.
func (h *Hist) Quantile(q float64) float64 {
	total := h.Total()
	if total <= 0 {
		return 0
	}
	rank, cum := q*total, 0.0
	for k, c := range h {
		if c <= 0 || cum+c < rank {
			cum += c
			continue
		}
		f := (rank - cum) / c
		if k == 0 {
			return f
		}
		return Bound(k-1) * math.Pow(bucketFactor, f)
	}
	return Bound(NumBuckets - 1)
}

// addQuantiles stands in for a histogram an edge did not send, shaped so
// that its p50 and p95 fall in the middle of the given ones' buckets and
// merged rows give the quantiles of the mixture: 45% a bucket below p50,
// 10% at it, 35% between p50 and p95, 10% at p95.
func (h *Hist) addQuantiles(n, p50, p95 float64) {
	h[max(BucketOf(p50)-1, 0)] += n * 0.45
	h[BucketOf(p50)] += n * 0.10
	h[BucketOf((p50+p95)/2)] += n * 0.35
	h[BucketOf(p95)] += n * 0.10
}
