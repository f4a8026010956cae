package resolvers

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"time"
)

// Query is one query of a log or dnstap file, as the offline observatory
// reads it.
type Query struct {
	At       time.Time
	Resolver netip.Addr
	Name     string
	ECSBits  int    // the ECS source prefix; -1: no ECS
	TTL      uint32 // our answer's ttl; 0: the analysis's default
}

// Stretch is how the offline observatory judges a resolver's caching.
type Stretch struct {
	// Factor: a resolver keeps our answers too long when it re-asks a
	// name no sooner than Factor times its ttl.
	Factor float64
	// MinIntervals is the re-queries a verdict needs.
	MinIntervals int
}

// DefaultStretch flags resolvers that keep answers 1.5 times their ttl or
// more, from 5 re-queries on.
var DefaultStretch = Stretch{Factor: 1.5, MinIntervals: 5}

// Kept is one resolver in the offline report.
type Kept struct {
	Resolver    netip.Addr  `json:"resolver"`
	Queries     int         `json:"queries"`
	ECSShare    float64     `json:"ecs_share"`
	ECSPrefixes map[int]int `json:"ecs_prefixes"`
	TTL         uint32      `json:"ttl_s"`
	Intervals   int         `json:"intervals"`
	// TTLKept is the 10th percentile of its re-query intervals: how long
	// it keeps an answer at the least, when its clients keep asking.
	TTLKept   float64 `json:"ttl_kept_s"`
	Stretched bool    `json:"stretched"`
	// Known: enough re-queries for a verdict.
	Known bool `json:"known"`
}

// Analyze reads queries (in any order) into one report per resolver, the
// busiest first; ttl is the ttl of a query that does not say.
func Analyze(qs []Query, ttl uint32, st Stretch) []Kept {
	type key struct {
		res  netip.Addr
		name string
	}
	slices.SortStableFunc(qs, func(a, b Query) int { return a.At.Compare(b.At) })
	last := map[key]time.Time{}
	type acc struct {
		k         Kept
		ecs       int
		intervals []float64
	}
	byRes := map[netip.Addr]*acc{}
	for i := range qs {
		q := &qs[i]
		a := byRes[q.Resolver]
		if a == nil {
			a = &acc{k: Kept{Resolver: q.Resolver, ECSPrefixes: map[int]int{}, TTL: ttl}}
			byRes[q.Resolver] = a
		}
		a.k.Queries++
		if q.ECSBits >= 0 {
			a.ecs++
			a.k.ECSPrefixes[q.ECSBits]++
		}
		if q.TTL > 0 {
			a.k.TTL = q.TTL
		}
		k := key{q.Resolver, q.Name}
		if t, ok := last[k]; ok {
			// Under a second: a retry or another client in the same
			// instant, not a cache's expiry.
			if d := q.At.Sub(t).Seconds(); d >= 1 {
				a.intervals = append(a.intervals, d)
			}
		}
		last[k] = q.At
	}
	out := make([]Kept, 0, len(byRes))
	for _, a := range byRes {
		k := a.k
		k.ECSShare = math.Round(1000*float64(a.ecs)/float64(k.Queries)) / 1000
		k.Intervals = len(a.intervals)
		if len(a.intervals) >= st.MinIntervals {
			slices.Sort(a.intervals)
			k.TTLKept = a.intervals[len(a.intervals)/10]
			k.Known = true
			k.Stretched = k.TTLKept >= st.Factor*float64(k.TTL)
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kept) int {
		if c := cmp.Compare(b.Queries, a.Queries); c != 0 {
			return c
		}
		return a.Resolver.Compare(b.Resolver)
	})
	return out
}
