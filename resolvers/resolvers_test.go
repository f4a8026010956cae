package resolvers

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo"
)

var testKey = []byte("0123456789abcdef0123")

// places puts 10.P.x.x in province P: 10.1 Jiangxi, 10.2 Shanghai, 10.3
// Zhejiang; everything else nowhere.
func places(_ context.Context, a netip.Addr) geo.Location {
	if !a.Is4() {
		return geo.Location{}
	}
	b := a.As4()
	if b[0] != 10 {
		return geo.Location{}
	}
	p := map[byte]string{1: "JX", 2: "SH", 3: "ZJ"}[b[1]]
	if p == "" {
		return geo.Location{}
	}
	return geo.Location{Country: "CN", Province: p, ISP: "telecom"}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestMap(t *testing.T, mod func(*Config)) (*Map, *clock) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Beacon, cfg.Key, cfg.MinSamples = "b.example.org.", testKey, 5
	if mod != nil {
		mod(&cfg)
	}
	clk := &clock{time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)}
	m, err := New(cfg, places, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func TestLabels(t *testing.T) {
	l, err := NewLabeler(testKey)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_800_000_000, 0)
	lb := l.Mint(at, 7)
	if len(lb) != LabelLen || len(lb) > 63 {
		t.Fatalf("Label %q has %d bytes", lb, len(lb))
	}
	if got, ok := l.Check(lb); !ok || !got.Equal(at) {
		t.Errorf("Check(%q) = %v, %v; want %v, true", lb, got, ok, at)
	}
	if _, ok := l.Check(strings.ToUpper(lb)); !ok {
		t.Errorf("An upper-cased label does not check: DNS names are case-insensitive")
	}
	other, _ := NewLabeler([]byte("another key of 16+ bytes"))
	tampered := []byte(lb)
	tampered[3] ^= 1
	for _, bad := range []string{other.Mint(at, 7), string(tampered), lb[:len(lb)-1], "", "x" + lb[1:], strings.Repeat("0", LabelLen)} {
		if _, ok := l.Check(bad); ok {
			t.Errorf("Check(%q) accepted a label the key did not mint", bad)
		}
	}
	if a, b := l.Fresh(at), l.Fresh(at); a == b {
		t.Errorf("Two fresh labels are the same: %s", a)
	}
	if _, err := NewLabeler([]byte("short")); err == nil {
		t.Errorf("A 5-byte key was accepted")
	}
}

// beacons has resolver res ask for n fresh labels and the edge report
// each fetched by a client of net10 (10.P.x.0/24 networks).
func beacons(t *testing.T, m *Map, clk *clock, res netip.Addr, source string, n int, p byte) ReportResults {
	t.Helper()
	var reps []Report
	for i := range n {
		lb := m.Labeler().Fresh(clk.t)
		if !m.BeaconQuery(res, lb) {
			t.Fatalf("BeaconQuery refused a fresh label %s", lb)
		}
		reps = append(reps, Report{Label: lb, Client: fmt.Sprintf("10.%d.%d.0/24", p, i%250)})
	}
	return m.Report(context.Background(), source, reps)
}

func TestBeaconsJoin(t *testing.T) {
	m, clk := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53") // a Shanghai resolver
	if got := beacons(t, m, clk, res, "edge", 30, 1); got[Joined] != 30 {
		t.Fatalf("Reports: %v, want 30 joined", got)
	}
	beacons(t, m, clk, res, "edge", 10, 3)
	s := m.Cycle(context.Background())
	p := s.Lookup(res)
	if p == nil {
		t.Fatalf("No population for %s: %+v", res, m.Observatory().Resolvers)
	}
	if p.Loc.Province != "JX" || p.Share != 0.75 || p.Samples != 40 {
		t.Errorf("Population %+v, want JX with 0.75 of 40", p)
	}
	// Its /24 speaks for a farm: another resolver of it gets the same.
	if q := s.Lookup(netip.MustParseAddr("10.2.0.54")); q == nil || q.Loc.Province != "JX" || q.Resolver.Bits() != 24 {
		t.Errorf("Farm population %+v, want the /24's, JX", q)
	}
	if q := s.Lookup(netip.MustParseAddr("10.2.1.53")); q != nil {
		t.Errorf("Another /24 has a population: %+v", q)
	}
}

func TestMinSamples(t *testing.T) {
	m, clk := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53")
	beacons(t, m, clk, res, "edge", 4, 1)
	if p := m.Cycle(context.Background()).Lookup(res); p != nil {
		t.Errorf("4 clients decide, min_samples 5: %+v", p)
	}
}

// TestForgedLabels: labels gslb did not mint, or minted longer than the
// window ago, move nothing.
func TestForgedLabels(t *testing.T) {
	m, clk := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53")
	forger, _ := NewLabeler([]byte("the attacker's own key!"))
	var reps []Report
	for i := range 1000 {
		lb := forger.Fresh(clk.t)
		if m.BeaconQuery(res, lb) {
			t.Fatalf("A forged label was taken")
		}
		reps = append(reps, Report{Label: lb, Client: fmt.Sprintf("10.3.%d.0/24", i%250)})
	}
	old := m.Labeler().Fresh(clk.t.Add(-DefaultWindow - time.Second))
	if m.BeaconQuery(res, old) {
		t.Errorf("A label minted before the window was taken")
	}
	// A minted label no resolver asked for.
	reps = append(reps, Report{Label: old, Client: "10.3.0.0/24"}, Report{Label: m.Labeler().Fresh(clk.t), Client: "10.3.0.0/24"})
	got := m.Report(context.Background(), "edge", reps)
	if got[Forged] != 1000 || got[Unknown] != 2 || got[Joined] != 0 {
		t.Errorf("Reports: %v, want 1000 forged, 2 unknown", got)
	}
	if s := m.Cycle(context.Background()); s.Len() != 0 {
		t.Errorf("Forged labels made populations: %+v", m.Observatory().Resolvers)
	}
}

// TestReplayedLabels: a label asked by one resolver and then through
// another joins only the first; a label joins once.
func TestReplayedLabels(t *testing.T) {
	m, clk := newTestMap(t, nil)
	first, second := netip.MustParseAddr("10.2.0.53"), netip.MustParseAddr("10.3.9.53")
	var reps []Report
	for i := range 50 {
		lb := m.Labeler().Fresh(clk.t)
		m.BeaconQuery(first, lb)
		m.BeaconQuery(second, lb) // the attacker replays it through its resolver
		reps = append(reps, Report{Label: lb, Client: fmt.Sprintf("10.1.%d.0/24", i)})
	}
	got := m.Report(context.Background(), "edge", reps)
	again := m.Report(context.Background(), "edge", reps)
	if got[Joined] != 50 || again[Duplicate] != 50 {
		t.Errorf("Reports %v then %v, want 50 joined, then 50 duplicate", got, again)
	}
	s := m.Cycle(context.Background())
	if p := s.Lookup(second); p != nil {
		t.Errorf("The replaying resolver got a population: %+v", p)
	}
	if p := s.Lookup(first); p == nil || p.Samples != 50 {
		t.Errorf("The first resolver's population %+v, want 50 clients", p)
	}
	if n := m.Observatory().Beacons["replayed"]; n != 50 {
		t.Errorf("Replays counted %d, want 50", n)
	}
}

// TestFloodingSource: one source reporting ever more fetches adds at most
// source_joins clients per cycle to a resolver; another source's are
// unaffected.
func TestFloodingSource(t *testing.T) {
	m, clk := newTestMap(t, func(c *Config) { c.SourceJoins = 100 })
	res := netip.MustParseAddr("10.2.0.53")
	beacons(t, m, clk, res, "honest", 60, 1) // Jiangxi clients
	got := beacons(t, m, clk, res, "flood", 3000, 3)
	if got[Joined] != 100 || got[Capped] != 2900 {
		t.Errorf("Flood: %v, want 100 joined, 2900 capped", got)
	}
	if got := beacons(t, m, clk, res, "honest", 10, 1); got[Joined] != 10 {
		t.Errorf("The honest source after the flood: %v, want 10 joined", got)
	}
	p := m.Cycle(context.Background()).Lookup(res)
	if p == nil || p.Samples != 170 || p.Loc.Province != "ZJ" {
		t.Fatalf("Population %+v, want 170 clients, ZJ the largest (100 of them)", p)
	}
	// The next cycle the cap starts again: a flood adds at most
	// source_joins per cycle, no more.
	if got := beacons(t, m, clk, res, "flood", 500, 3); got[Joined] != 100 {
		t.Errorf("Flood in the next cycle: %v, want 100 joined", got)
	}
}

func TestLateFetch(t *testing.T) {
	m, clk := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53")
	lb := m.Labeler().Fresh(clk.t)
	m.BeaconQuery(res, lb)
	late := clk.t.Add(DefaultWindow + time.Second).Format(time.RFC3339)
	if got := m.Report(context.Background(), "edge", []Report{{Label: lb, Client: "10.1.0.0/24", At: late}}); got[Late] != 1 {
		t.Errorf("A fetch after the window: %v, want late", got)
	}
}

// TestECSLearns: the ECS a resolver sends on some queries teaches its
// population, which then decides the queries it sends without.
func TestECSLearns(t *testing.T) {
	m, _ := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53")
	for i := range 20 {
		m.Observe(res, netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 1, 24, true, false, 1, 60)
		m.Observe(res, netip.Addr{}, 0, 0, false, false, 1, 60)
	}
	s := m.Cycle(context.Background())
	p := s.Lookup(res)
	if p == nil || p.Loc.Province != "JX" || p.Samples != 20 {
		t.Fatalf("Population %+v, want 20 JX clients", p)
	}
	o := m.Observatory()
	var r ResolverJSON
	for _, r = range o.Resolvers {
		if r.Resolver == "10.2.0.53" {
			break
		}
	}
	if r.Resolver != "10.2.0.53" || r.ECSShare != 0.5 || r.ECSPrefixes[24] != 20 || r.Total != 40 || !r.Deciding || r.Province != "SH" {
		t.Errorf("Resolver %+v, want 10.2.0.53 in SH, ECS share 0.5, 20 /24s, 40 queries, deciding", r)
	}
	if o.Queries["ecs"] != 20 || o.Queries["address"] != 20 {
		t.Errorf("Counts %v, want 20 ecs and 20 address", o.Queries)
	}
}

func TestDecay(t *testing.T) {
	m, clk := newTestMap(t, func(c *Config) { c.HalfLife = time.Hour })
	res := netip.MustParseAddr("10.2.0.53")
	beacons(t, m, clk, res, "edge", 40, 1)
	m.Cycle(context.Background())
	clk.t = clk.t.Add(time.Hour)
	if p := m.Cycle(context.Background()).Lookup(res); p == nil || p.Samples != 20 {
		t.Errorf("After a half-life: %+v, want 20 clients", p)
	}
	clk.t = clk.t.Add(3 * time.Hour)
	if p := m.Cycle(context.Background()).Lookup(res); p != nil {
		t.Errorf("After four half-lives 2.5 clients are left, under min_samples 5; got %+v", p)
	}
}

// TestBound: the map keeps the busiest max_resolvers entries.
func TestBound(t *testing.T) {
	m, _ := newTestMap(t, func(c *Config) { c.MaxResolvers = 1000 })
	for i := range 5000 {
		a := netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)})
		for range 1 + i%3 {
			m.Observe(a, netip.Addr{}, 0, 0, false, false, 1, 60)
		}
		if i%2000 == 1999 {
			m.Cycle(context.Background())
		}
	}
	m.Cycle(context.Background())
	if n := len(m.res); n > 1000 {
		t.Errorf("%d entries kept, bound 1000", n)
	}
}

// TestMemoryBound measures the map at its bound: twice max_resolvers
// entries (a cycle prunes to max_resolvers; new ones wait in between) of
// MaxPlaces places each, the beacon table and its queue full, and the
// snapshot.
func TestMemoryBound(t *testing.T) {
	const max = DefaultMaxResolvers
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, clk := newTestMap(t, nil)
	for i := range MaxBeacons {
		m.beacons.add(beaconQuery{resolver: netip.AddrFrom4([4]byte{10, 2, 0, 1}), label: m.Labeler().Mint(clk.t, uint32(i)), at: clk.t})
	}
	for i := range beaconQueue {
		m.beaconQ <- beaconQuery{resolver: netip.AddrFrom4([4]byte{10, 2, 0, 1}), label: m.Labeler().Mint(clk.t, uint32(i+MaxBeacons)), at: clk.t}
	}
	for i := range 2 * max {
		r := m.entry(netip.PrefixFrom(netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}), 32))
		for p := range MaxPlaces {
			r.learn(m.intern(geo.Location{Country: "CN", Province: fmt.Sprint("P", p), ISP: "telecom"}), clk.t)
		}
		r.prefixes[24]++
	}
	s := m.build(clk.t)
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := after.HeapAlloc - before.HeapAlloc
	t.Logf("%d entries x %d places, %d beacons, snapshot of %d: %.1f MiB", 2*max, MaxPlaces, MaxBeacons, s.Len(), float64(used)/(1<<20))
	if used > 96<<20 {
		t.Errorf("The map at its bound takes %d bytes, over 96 MiB", used)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(s)
}

// TestQueryPathAllocates nothing: Observe and Lookup.
func TestQueryPathAllocatesNothing(t *testing.T) {
	m, clk := newTestMap(t, nil)
	res := netip.MustParseAddr("10.2.0.53")
	beacons(t, m, clk, res, "edge", 10, 1)
	s := m.Cycle(context.Background())
	cl := netip.MustParseAddr("10.1.0.1")
	if n := testing.AllocsPerRun(1000, func() {
		m.Observe(res, cl, 1, 24, true, false, 7, 60)
		if s.Lookup(res) == nil {
			t.Fatal("No population")
		}
	}); n != 0 {
		t.Errorf("%v allocations per query", n)
	}
}

// TestRingLosesOnlyWhatIsLapped: a drain takes every observation written
// since the last, up to the ring's size.
func TestRingLosesOnlyWhatIsLapped(t *testing.T) {
	var r ring
	res := netip.MustParseAddr("2001:db8::53")
	for i := range ringSize + 10 {
		r.put(res, netip.MustParseAddr("10.1.0.1"), 1, 24, true, false, uint32(i), 60)
	}
	n := 0
	lost := r.drain(func(o *obs) {
		if o.resolver != res || o.client != netip.MustParseAddr("10.1.0.1") || o.ecsBits != 24 || !o.fromECS || o.ttl != 60 {
			t.Fatalf("Observation %+v", o)
		}
		n++
	})
	if n != ringSize || lost != 10 {
		t.Errorf("Drained %d, lost %d; want %d and 10", n, lost, ringSize)
	}
}

// BenchmarkQueryPath is what the map adds to a decision: the snapshot's
// lookup of the resolver (in a map of 10,000 resolvers, 256 to a /24) and
// the observation of the query; for an unmapped resolver and a mapped one.
func BenchmarkQueryPath(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MinSamples = 1
	m, err := New(cfg, places, nil)
	if err != nil {
		b.Fatal(err)
	}
	cl := netip.MustParseAddr("10.1.0.1")
	for i := range 10000 {
		m.Observe(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), cl, 1, 24, true, false, 7, 60)
	}
	m.Cycle(context.Background())
	for _, bc := range []struct {
		name   string
		res    netip.Addr
		mapped bool
	}{{"unmapped", netip.MustParseAddr("10.3.0.53"), false}, {"mapped", netip.MustParseAddr("10.2.0.53"), true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if (m.Snapshot().Lookup(bc.res) != nil) != bc.mapped {
					b.Fatal("Lookup")
				}
				m.Observe(bc.res, netip.Addr{}, 0, 0, false, bc.mapped, 7, 60)
			}
		})
	}
}
