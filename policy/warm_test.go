package policy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

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
					prep := prepOf(v, rec, qt, c)
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
						if prep != nil && prepOf(v, rec, qt, c) != prep {
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

// TestReserve: the cache is sized for twice the decisions asked, a power
// of two, at least the fewest slots and at most what the bound holds;
// a new size starts empty, the same size keeps its entries.
func TestReserve(t *testing.T) {
	const each = 1344
	c := NewCache()
	if got := c.Reserve(10, WarmBytes, each); got != cacheSlots/2 || c.Slots() != cacheSlots {
		t.Errorf("10 decisions: limit %d, %d slots", got, c.Slots())
	}
	if got := c.Reserve(10000, 1<<30, each); got != 1<<14 || c.Slots() != 1<<15 {
		t.Errorf("10,000 decisions: limit %d, %d slots", got, c.Slots())
	}
	limit := c.Reserve(1<<30, WarmBytes, each)
	if int64(limit)*each > WarmBytes || int64(2*limit)*each <= WarmBytes {
		t.Errorf("A billion decisions: limit %d, %d bytes under a bound of %d", limit, int64(limit)*each, WarmBytes)
	}
	if big := c.Reserve(1<<30, WarmBytes, 4*each); big >= limit {
		t.Errorf("Decisions four times the size: limit %d, as many as %d", big, limit)
	}
	limit = c.Reserve(1<<30, WarmBytes, each)
	tb := chinaTable(t)
	p := scoring.DefaultParams
	v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now(), Cache: c})
	one, err := table.Parse("t.yaml", []byte("nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 30, lon: 120}\nrecords:\n  - name: www.example.org\n"), zones, 60)
	if err != nil {
		t.Fatal(err)
	}
	if small, _ := NewView(Inputs{Table: one, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now()}); small.DecisionBytes() >= v.DecisionBytes() {
		t.Errorf("Decisions over %d nodes counted at %d bytes, over %d at %d", len(small.Nodes), small.DecisionBytes(), len(v.Nodes), v.DecisionBytes())
	}
	cls := []scoring.Client{clients(rand.New(rand.NewPCG(7, 8)))}
	n := v.Warm(cls, limit, nil, func() bool { return true })
	if n == 0 || v.Held() != n {
		t.Fatalf("Warmed %d, held %d", n, v.Held())
	}
	if c.Reserve(1<<30, WarmBytes, each); v.Held() != n {
		t.Errorf("The same size dropped entries: %d held of %d", v.Held(), n)
	}
	if c.Reserve(1, WarmBytes, each); v.Held() != 0 || c.Slots() != cacheSlots {
		t.Errorf("A new size kept %d entries in %d slots", v.Held(), c.Slots())
	}
}

// TestRecentFirst: the clients queries asked a view for are the next
// view's warm set, and its warmed decisions for them are exact.
func TestRecentFirst(t *testing.T) {
	tb := chinaTable(t)
	r := rand.New(rand.NewPCG(9, 10))
	p := scoring.DefaultParams
	cache := NewCache()
	now := time.Now()
	v1, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: now, Cache: cache})
	www := tb.Records["www.example.org."]
	asked := map[scoring.Client]bool{}
	for range 50 {
		q := Query{Record: www, QType: dns.TypeA, Client: clients(r), Subnet: r.Uint64()}
		v1.Decide(&q)
		asked[q.Client] = true
	}
	recent := v1.Recent()
	if len(recent) != len(asked) {
		t.Fatalf("%d recent clients, %d asked", len(recent), len(asked))
	}
	for _, c := range recent {
		if !asked[c] {
			t.Fatalf("%+v is recent, and was never asked", c)
		}
	}
	down := health.NewSnapshot(map[string]health.Status{"ZJ-telecom": {State: health.StateDown}})
	v2, _ := NewView(Inputs{Table: tb, Snapshot: down, Params: &p, Serial: 1, Now: now, Cache: cache})
	full, _ := NewView(Inputs{Table: tb, Snapshot: down, Params: &p, Serial: 1, Now: now})
	if len(v2.Recent()) != 0 {
		t.Fatalf("A new view holds %d clients' decisions", len(v2.Recent()))
	}
	v2.Warm(recent, WarmMax, nil, func() bool { return true })
	for _, c := range recent {
		if v2.cache.get(v2.gen, hashKey(www, dns.TypeA, &c), www, dns.TypeA, &c) == nil {
			t.Fatalf("%+v not warmed", c)
		}
		q := Query{Record: www, QType: dns.TypeA, Client: c, Subnet: r.Uint64()}
		if got, want := v2.Decide(&q), full.Decide(&q); got != want {
			t.Fatalf("%+v: warmed %+v\nfull %+v", c, got.Decision, want.Decision)
		}
	}

	// Warmed and asked, they are recent again since v2; warmed alone,
	// not; asked under a later view, too.
	var unasked, later scoring.Client
	for unasked == later || asked[unasked] || asked[later] {
		unasked, later = clients(r), clients(r)
	}
	v2.Warm([]scoring.Client{unasked}, WarmMax, nil, func() bool { return true })
	v3, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: now, Cache: cache})
	v3.Decide(&Query{Record: www, QType: dns.TypeA, Client: later, Subnet: r.Uint64()})
	again := map[scoring.Client]bool{}
	for _, c := range v2.Recent() {
		again[c] = true
	}
	if len(again) != len(recent)+1 || !again[later] || again[unasked] {
		t.Errorf("Recent since v2: %d clients, %v for the one asked under v3, %v for the one warmed alone; want %d, true, false",
			len(again), again[later], again[unasked], len(recent)+1)
	}
}

// TestWarmHoldsNothingQueriesWaitOn: while a view's warm-up is stopped
// midway, queries of the view decide (and prepare what it has not), and
// their decisions are exact.
func TestWarmHoldsNothingQueriesWaitOn(t *testing.T) {
	tb := chinaTable(t)
	r := rand.New(rand.NewPCG(11, 12))
	var cls []scoring.Client
	for range 300 {
		cls = append(cls, clients(r))
	}
	p := scoring.DefaultParams
	v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now(), Cache: NewCache()})
	full, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now()})
	paused, resume := make(chan struct{}), make(chan struct{})
	calls := 0
	done := make(chan int)
	go func() {
		done <- v.Warm(cls, WarmMax, nil, func() bool {
			if calls++; calls == 2 { // midway: hold the warm-up here
				close(paused)
				<-resume
			}
			return true
		})
	}()
	<-paused
	www := tb.Records["www.example.org."]
	for i := range cls {
		q := Query{Record: www, QType: dns.TypeA, Client: cls[i], Subnet: r.Uint64()}
		if got, want := v.Decide(&q), full.Decide(&q); got != want {
			t.Fatalf("%+v during the warm-up: %+v\nfull %+v", cls[i], got.Decision, want.Decision)
		}
	}
	close(resume)
	if n := <-done; n == 0 {
		t.Errorf("Nothing warmed")
	}
}

// TestSweep: a view's Sweep drops the decisions of the views before it from
// the shared cache, and keeps its own and a later view's.
func TestSweep(t *testing.T) {
	tb := chinaTable(t)
	p := scoring.DefaultParams
	cache := NewCache()
	r := rand.New(rand.NewPCG(11, 12))
	cls := []scoring.Client{clients(r)}
	for len(cls) < 2 {
		if c := clients(r); c != cls[0] {
			cls = append(cls, c)
		}
	}
	view := func() *View {
		v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Serial: 1, Now: time.Now(), Cache: cache})
		return v
	}
	old := view()
	if n := old.Warm(cls, WarmMax, nil, func() bool { return true }); n == 0 || old.Held() != n {
		t.Fatalf("Warmed %d, held %d", n, old.Held())
	}
	// The current view's decisions of the first client take the old
	// ones' places; the second's stay until swept.
	cur := view()
	m := cur.Warm(cls[:1], WarmMax, nil, func() bool { return true })
	left := old.Held()
	if m == 0 || left == 0 {
		t.Fatalf("Warmed %d, the old view holds %d", m, left)
	}
	if dropped := cur.Sweep(); dropped != left || old.Held() != 0 || cur.Held() != m {
		t.Errorf("Sweep dropped %d of %d; held after: old %d, current %d of %d", dropped, left, old.Held(), cur.Held(), m)
	}
	later := view()
	k := later.Warm(cls, WarmMax, nil, func() bool { return true })
	if dropped := cur.Sweep(); dropped != 0 || later.Held() != k {
		t.Errorf("An earlier view's Sweep dropped %d of a later view's %d", dropped, k)
	}
}

// prepOf is the preparation v's generation of its cache holds for the
// question, nil when none.
func prepOf(v *View, rec *table.Record, qt uint16, c *scoring.Client) *scoring.Prepared {
	if e := v.cache.get(v.gen, hashKey(rec, qt, c), rec, qt, c); e != nil {
		return e.prep
	}
	return nil
}
