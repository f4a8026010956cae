package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// TestWarmedDecisionsAreExact: Warm prepares every record's decisions for
// the clients into the view's generation, a query of such a client picks
// from them (no preparation), exactly as a decision made in full; a health
// change's view starts empty and is warmed again, to its own decisions.
func TestWarmedDecisionsAreExact(t *testing.T) {
	tb := chinaTable(t)
	r := rand.New(rand.NewPCG(3, 4))
	var cls []scoring.Client
	seen := map[scoring.Client]bool{}
	for range 300 {
		if c := clients(r); !seen[c] { // each once, as the control plane gives them
			seen[c] = true
			cls = append(cls, c)
		}
	}
	p := scoring.DefaultParams
	cache := NewCache()
	now := time.Now()
	down := health.NewSnapshot(map[string]health.Status{"ZJ-telecom": {State: health.StateDown}})
	moved := 0
	var before map[scoring.Client]*scoring.Prepared
	for step, snap := range []*health.Snapshot{health.NewSnapshot(nil), down} {
		v, _ := NewView(Inputs{Table: tb, Snapshot: snap, Params: &p, Serial: 1, Now: now, Cache: cache})
		full, _ := NewView(Inputs{Table: tb, Snapshot: snap, Params: &p, Serial: 1, Now: now})
		www := tb.Records["www.example.org."]
		if v.cache.get(v.gen, hashKey(www, dns.TypeA, &cls[0]), www, dns.TypeA, &cls[0]) != nil {
			t.Fatalf("Step %d: a new view reads the old one's decisions", step)
		}
		n := v.Warm(cls, WarmMax, nil, func() bool { return true })
		if n == 0 {
			t.Fatalf("Step %d: nothing warmed", step)
		}
		if again := v.Warm(cls, WarmMax, nil, func() bool { return true }); again != n {
			t.Errorf("Step %d: warmed %d, then %d", step, n, again)
		}
		after := map[scoring.Client]*scoring.Prepared{}
		lost := 0
		for i := range cls {
			c := &cls[i]
			for _, name := range tb.Names {
				rec := tb.Records[name]
				for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
					prep := v.cache.get(v.gen, hashKey(rec, qt, c), rec, qt, c)
					cand := rec.V4
					if qt == dns.TypeAAAA {
						cand = rec.V6
					}
					q := Query{Record: rec, QType: qt, Client: *c}
					if prep == nil && !scoring.Prepare(v.input(&q, cand)).PerSubnet() {
						lost++ // the cache is lossy: a key's probes may all be taken
					}
					if name == "www.example.org." && qt == dns.TypeA && prep != nil {
						after[*c] = prep
					}
					for range 3 { // fresh subnets of a warmed location
						q.Subnet = r.Uint64()
						if got, want := v.Decide(&q), full.Decide(&q); got != want {
							t.Fatalf("Step %d, %+v: warmed %+v\nfull %+v", step, *c, got.Decision, want.Decision)
						}
						if prep != nil && v.cache.get(v.gen, hashKey(rec, qt, c), rec, qt, c) != prep {
							t.Fatalf("Step %d: the query prepared its decision again", step)
						}
					}
				}
			}
		}
		if lost > n/50 {
			t.Errorf("Step %d: %d of %d decisions not warmed", step, lost, n)
		}
		for c, prep := range before {
			if after[c] != prep {
				moved++
			}
		}
		before = after
	}
	if moved == 0 {
		t.Errorf("The health change's view kept the old decisions")
	}
}

// TestWarmStops: Warm stops at its limit, when stop closes and when the
// view is no longer current.
func TestWarmStops(t *testing.T) {
	tb := chinaTable(t)
	r := rand.New(rand.NewPCG(5, 6))
	var cls []scoring.Client
	for range 200 {
		cls = append(cls, clients(r))
	}
	p := scoring.DefaultParams
	v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now(), Cache: NewCache()})
	if n := v.Warm(cls, 10, nil, func() bool { return true }); n != 10 {
		t.Errorf("Limit 10: %d", n)
	}
	stop := make(chan struct{})
	close(stop)
	if n := v.Warm(cls, WarmMax, stop, func() bool { return true }); n != 0 {
		t.Errorf("Stopped: %d", n)
	}
	if n := v.Warm(cls, WarmMax, nil, func() bool { return false }); n != 0 {
		t.Errorf("Not current: %d", n)
	}
	nocache, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now()})
	if n := nocache.Warm(cls, WarmMax, nil, func() bool { return true }); n != 0 {
		t.Errorf("No cache: %d", n)
	}
}
