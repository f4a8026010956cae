package resolvers

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// TestStretchFound: on a synthetic log of 200 resolvers over two hours,
// where 20% keep our 60 s answers for 300 s and the rest for the ttl, and
// clients ask each at random, Analyze finds the stretchers with precision
// and recall of 95% or more.
func TestStretchFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var qs []Query
	stretcher := map[netip.Addr]bool{}
	names := []string{"www.example.org.", "api.example.org."}
	for i := range 200 {
		res := netip.AddrFrom4([4]byte{61, 0, byte(i / 250), byte(i%250 + 1)})
		keep := 60 * time.Second
		if i%5 == 0 {
			keep, stretcher[res] = 300*time.Second, true
		}
		// Busy and quiet resolvers: a client asks every 1 to 30 s on
		// average; some send ECS.
		mean := time.Duration(1+rng.IntN(30)) * time.Second
		ecs := -1
		if i%3 == 0 {
			ecs = 24
		}
		for _, name := range names {
			var expires time.Time
			for at := start; at.Before(start.Add(2 * time.Hour)); at = at.Add(time.Duration(rng.ExpFloat64() * float64(mean))) {
				if at.Before(expires) {
					continue // answered from its cache: we never see it
				}
				// Another query within the same second now and then: a retry.
				qs = append(qs, Query{At: at, Resolver: res, Name: name, ECSBits: ecs, TTL: 60})
				if rng.IntN(20) == 0 {
					qs = append(qs, Query{At: at.Add(200 * time.Millisecond), Resolver: res, Name: name, ECSBits: ecs, TTL: 60})
				}
				expires = at.Add(keep)
			}
		}
	}
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	got := Analyze(qs, 60, DefaultStretch)
	var tp, fp, fn int
	for _, k := range got {
		switch {
		case k.Stretched && stretcher[k.Resolver]:
			tp++
		case k.Stretched:
			fp++
		case stretcher[k.Resolver]:
			fn++
		}
	}
	precision, recall := float64(tp)/float64(tp+fp), float64(tp)/float64(tp+fn)
	t.Logf("%d queries, %d resolvers, %d stretchers: precision %.3f, recall %.3f", len(qs), len(got), len(stretcher), precision, recall)
	if precision < 0.95 || recall < 0.95 {
		t.Errorf("Precision %.3f, recall %.3f; want both at least 0.95 (tp %d fp %d fn %d)", precision, recall, tp, fp, fn)
	}
}
