package plan

import (
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/scoring"
)

// Sample is one decision kept for the readiness estimate: enough of the
// query to decide it again under a plan, and the node it got.
type Sample struct {
	Record string
	QType  uint16
	Client scoring.Client
	Subnet uint64           // the spread's unit, as the decision hashed it
	Addr   netip.Addr       // the client's address
	Pin    *overrides.Entry // the pin that decided it; nil: none
	Node   string           // the node it got
	At     time.Time
}

// Sampler keeps a bounded sample of recent decisions: one in
// SampleEvery on average, drawn at random so that no periodic pattern of
// the traffic (a resolver pool's rotation) is sampled alone; the last
// SampleSize of them. Take and Keep are lock-free; only the decisions
// kept allocate.
type Sampler struct {
	n     atomic.Uint64
	slots [SampleSize]atomic.Pointer[Sample]
}

// The sample's size and rate: 2,048 of the last 16,384 decisions.
const (
	SampleSize  = 2048
	SampleEvery = 8
)

// Take reports whether the next decision is one to keep: the caller then
// builds its Sample and hands it to Keep.
func (s *Sampler) Take() (slot uint64, ok bool) {
	if rand.Uint32()%SampleEvery != 0 { // a power of 2: a mask
		return 0, false
	}
	return s.n.Add(1) % SampleSize, true
}

// Keep stores a sample in the slot Take gave.
func (s *Sampler) Keep(slot uint64, x *Sample) { s.slots[slot%SampleSize].Store(x) }

// Recent is the kept samples not older than since.
func (s *Sampler) Recent(since time.Time) []Sample {
	out := make([]Sample, 0, SampleSize)
	for i := range s.slots {
		if x := s.slots[i].Load(); x != nil && !x.At.Before(since) {
			out = append(out, *x)
		}
	}
	return out
}

// Figure is one node's estimate.
type Figure struct {
	Node string `json:"node"`
	// Share and NewShare are the node's shares of the sampled clients,
	// now and under the plan.
	Share    float64 `json:"share"`
	NewShare float64 `json:"new_share"`
	// Load is the node's load now; Projected its estimate under the plan.
	Load      float64 `json:"load"`
	Projected float64 `json:"projected_load"`
	Drained   bool    `json:"drained,omitempty"` // by the plan or before it
	Over      bool    `json:"over_max_load,omitempty"`
}

// Readiness is the estimate of a plan's execution.
type Readiness struct {
	Samples int      `json:"samples"` // the recent decisions it is made from
	MaxLoad float64  `json:"max_load"`
	Ready   bool     `json:"ready"`
	Over    []string `json:"over,omitempty"` // the nodes that would pass max_load
	Nodes   []Figure `json:"nodes"`
}

// Estimate is the readiness of a plan from recent decisions: each sample
// is decided again under the plan (decide gives the node, "" for none),
// and a node's load is taken to follow its share of the clients: its load
// times its new share over its old one, and, for a node that had none of
// the sampled clients, its load plus its new share times the mean load per
// share of the nodes that had some. A node not drained whose projected
// load reaches maxLoad makes the plan not ready.
func Estimate(samples []Sample, decide func(*Sample) string, loads map[string]float64, drained map[string]bool, maxLoad float64) Readiness {
	r := Readiness{Samples: len(samples), MaxLoad: maxLoad, Ready: true}
	before, after := map[string]int{}, map[string]int{}
	for i := range samples {
		before[samples[i].Node]++
		if n := decide(&samples[i]); n != "" {
			after[n]++
		}
	}
	total := float64(max(len(samples), 1))
	var perShare float64 // the mean load per share of the nodes with clients
	var with int
	for id, n := range before {
		if l, ok := loads[id]; ok && n > 0 {
			perShare += l / (float64(n) / total)
			with++
		}
	}
	if with > 0 {
		perShare /= float64(with)
	}
	for _, id := range slices.Sorted(maps.Keys(loads)) {
		f := Figure{Node: id, Load: loads[id], Share: float64(before[id]) / total, NewShare: float64(after[id]) / total, Drained: drained[id]}
		switch {
		case f.Drained:
			f.Projected = 0
		case before[id] > 0:
			f.Projected = f.Load * f.NewShare / f.Share
		default:
			f.Projected = f.Load + f.NewShare*perShare
		}
		f.Projected = round(f.Projected)
		f.Share, f.NewShare = round(f.Share), round(f.NewShare)
		if !f.Drained && f.Projected >= maxLoad && f.NewShare > f.Share {
			f.Over = true
			r.Ready = false
			r.Over = append(r.Over, id)
		}
		r.Nodes = append(r.Nodes, f)
	}
	return r
}

// round keeps four decimals: the figures are estimates.
func round(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }
