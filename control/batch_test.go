package control

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
)

// TestProbeResultsBatched: twenty probed nodes whose every probe reports a
// new load (two hundred results a second) publish at most one view per
// loadBatch, not one per result; the last results are not lost: once the
// loads stop moving the view holds them; a node going down is published.
func TestProbeResultsBatched(t *testing.T) {
	var hits atomic.Uint64
	var steady, down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() && r.URL.Path == "/n0" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		load := 0.5
		if !steady.Load() {
			load = float64(1+hits.Add(1)%40) / 100 // a node's next probe reads another load
		}
		fmt.Fprintf(w, `{"status":"ok","load":%.2f}`, load)
	}))
	t.Cleanup(srv.Close)
	const n = 20
	var b strings.Builder
	b.WriteString("probe_defaults: {interval: 100ms, timeout: 80ms, rise: 1, fall: 3, hold_down: 0s}\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: n%d, ipv4: [192.0.2.%d], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, probe: {url: %s/n%d, load_field: load}}\n", i, i+1, srv.URL, i)
	}
	b.WriteString("records:\n  - name: www.example.org\n")
	g := newFixtureControl(t, b.String(), "cooldown 0s\n")
	testsupport.WaitFor(t, "every node up", func() (bool, string) {
		v := g.View()
		for _, s := range v.Status {
			if s.State != policy.StateUp {
				return false, fmt.Sprint(v.Status)
			}
		}
		return true, ""
	})

	v0, h0, t0 := g.published.Load(), hits.Load(), time.Now()
	testsupport.WaitFor(t, "200 probe results", func() (bool, string) {
		return hits.Load()-h0 >= 200, fmt.Sprintf("%d results", hits.Load()-h0)
	})
	views, took := g.published.Load()-v0, time.Since(t0)
	// One view at the start of each batch, and one a batch that ran
	// across t0 may still publish.
	if most := uint64(took/loadBatch) + 2; views > most {
		t.Errorf("%d probe results in %v published %d views, want at most %d", hits.Load()-h0, took, views, most)
	}

	steady.Store(true)
	testsupport.WaitFor(t, "the last loads in the view", func() (bool, string) {
		v := g.View()
		for i, nd := range v.Nodes {
			if math.Abs(nd.Load-0.5) > 1e-9 {
				return false, fmt.Sprintf("node %d load %v", i, nd.Load)
			}
		}
		return true, ""
	})
	down.Store(true)
	testsupport.WaitFor(t, "n0 down in the view", func() (bool, string) {
		s := g.View().Status[0]
		return s.State == policy.StateDown, s.State
	})
}

// TestBatcher: a change of state publishes at once, every time; load
// reports publish at once after a quiet batch, then once at the end of the
// batch however many came.
func TestBatcher(t *testing.T) {
	var b batcher
	t.Cleanup(b.stop)
	var n atomic.Int32
	publish := func() { n.Add(1) }
	b.report(false, publish)
	if n.Load() != 1 {
		t.Fatalf("The first load report: %d publishes, want 1 at once", n.Load())
	}
	for range 50 {
		b.report(false, publish)
	}
	if n.Load() != 1 {
		t.Fatalf("Load reports within the batch: %d publishes, want them pending", n.Load())
	}
	b.report(true, publish)
	b.report(true, publish)
	if n.Load() != 3 {
		t.Fatalf("Two changes of state: %d publishes, want 3", n.Load())
	}
	testsupport.WaitFor(t, "the batch's publish", func() (bool, string) { return n.Load() == 4, fmt.Sprint(n.Load()) })

	// A view published for another reason takes the pending reports
	// with it: the batch starts over, and publishes nothing meanwhile.
	b.report(false, publish)
	b.published()
	b.mu.Lock()
	pending, last := b.pending, b.last
	b.mu.Unlock()
	if pending != nil || time.Since(last) > loadBatch/2 {
		t.Fatalf("After another view: pending %v, the batch started %v ago", pending != nil, time.Since(last))
	}
	b.report(false, publish)
	b.mu.Lock()
	pending = b.pending
	b.mu.Unlock()
	if n.Load() != 4 || pending == nil {
		t.Fatalf("A report after another view: %d publishes, pending %v; want 4 and a pending one", n.Load(), pending != nil)
	}
}

// TestWarmPaced: the sliced warm-up prepares exactly what Warm does in one
// go (Warm then finds every decision held), keeps to its limit, and stops
// when stop closes or the view is no longer current.
func TestWarmPaced(t *testing.T) {
	g := newFixtureControl(t, fixtureNodes, "precompute 64MiB\n")
	var cls []scoring.Client
	testsupport.WaitFor(t, "the precomputed locations", func() (bool, string) {
		return g.locator.Placed().Len() > 0, "none yet"
	})
	places := g.locator.Placed()
	for i := range places.Len() {
		loc := places.At(i)
		cls = append(cls, policy.ClientOf(&loc))
	}
	at := func(i int) scoring.Client { return cls[i] }
	fresh := func() *policy.View {
		v, _ := policy.NewView(policy.Inputs{Table: g.Table(), Snapshot: health.NewSnapshot(nil), Params: &g.opts.Params,
			Now: time.Now(), Cache: policy.NewCache()})
		return v
	}
	always := func() bool { return true }
	v := fresh()
	n := warmSliced(v, len(cls), at, policy.WarmMax, nil, always)
	if n == 0 {
		t.Fatalf("Nothing warmed for %d clients", len(cls))
	}
	if again := v.Warm(cls, policy.WarmMax, nil, always); again != n {
		t.Errorf("Paced warm-up held %d decisions, Warm then finds %d", n, again)
	}
	if got := warmSliced(fresh(), len(cls), at, 3, nil, always); got != 3 {
		t.Errorf("Limit 3: %d", got)
	}
	stop := make(chan struct{})
	close(stop)
	if got := warmSliced(fresh(), len(cls), at, policy.WarmMax, stop, always); got != 0 {
		t.Errorf("Stopped: %d", got)
	}
	if got := warmSliced(fresh(), len(cls), at, policy.WarmMax, nil, func() bool { return false }); got != 0 {
		t.Errorf("Not current: %d", got)
	}
}

// TestReloadViews: a node table rewritten without a change (a new
// modification time, the same bytes) builds no view, and so starts no
// warm-up; a rewrite with a change builds exactly one.
func TestReloadViews(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "reload 0\n"))
	nodes := filepath.Join(dir, "nodes.yaml")
	changed := strings.Replace(fixtureNodes, "192.0.2.3", "192.0.2.33", 1)
	for i, step := range []struct {
		content string
		views   uint64
	}{{fixtureNodes, 0}, {changed, 1}, {changed, 0}, {fixtureNodes, 1}} {
		before := g.published.Load()
		touch(t, nodes, step.content, i+1)
		reloadSettled(g)
		reloadSettled(g)
		if got := g.published.Load() - before; got != step.views {
			t.Errorf("Rewrite %d: %d views, want %d", i, got, step.views)
		}
	}
}

// TestWarmSpaced: views published faster than warmGap (twenty in about a
// second) start at most one warm-up per warmGap, and the latest view is
// the one warmed.
func TestWarmSpaced(t *testing.T) {
	g := newFixtureControl(t, fixtureNodes, "precompute 64MiB\n")
	testsupport.WaitFor(t, "the first view warmed", func() (bool, string) {
		return g.warmer.warmed.Load() == g.View() && g.warmer.warmedOnce(), "not yet"
	})
	s0, t0 := g.pace.started.Load(), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range 20 {
		<-tick.C
		g.mu.Lock()
		g.publish()
		g.mu.Unlock()
	}
	took := time.Since(t0)
	if most := uint64(took/warmGap) + 2; g.pace.started.Load()-s0 > most {
		t.Errorf("20 views in %v started %d warm-ups, want at most %d", took, g.pace.started.Load()-s0, most)
	}
	last := g.View()
	testsupport.WaitFor(t, "the latest view warmed", func() (bool, string) {
		return g.warmer.warmed.Load() == last, "not yet"
	})
}

// TestWarmRestsForTheCollector: a warm-up on one processor rests while the
// heap is near its goal: at most gcRestMax at a time and gcCycleRestMax in
// a cycle, not again in a new cycle until the heap was seen below the
// threshold (what is left unswept counts), and not when stopped; the
// runtime has the metrics it reads.
func TestWarmRestsForTheCollector(t *testing.T) {
	c := newCollector()
	c.state() // reads the runtime's metrics
	for _, s := range c.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			t.Fatalf("runtime metric %s: kind %v, want uint64", s.Name, s.Value.Kind())
		}
	}
	c.on = true
	near, cycles := false, uint64(7)
	reads := 0
	c.state = func() (bool, uint64) { reads++; return near, cycles }
	rest := func() int { // the reads of one wait
		t.Helper()
		reads = 0
		if !c.wait(nil) {
			t.Fatal("wait stopped without a stop")
		}
		return reads
	}
	if got := rest(); got != 1 {
		t.Errorf("Far from the goal: %d reads, want 1 (no rest)", got)
	}
	fresh := newCollector() // a warm-up that starts in the middle of a cycle, near its end
	fresh.on = true
	n := 0
	fresh.state = func() (bool, uint64) { n++; return n < 3, 9 }
	if !fresh.wait(nil) || n != 3 {
		t.Errorf("A new warm-up near the goal: %d reads, want 3 (a rest)", n)
	}
	near = true
	rests := 0
	for got := rest(); got > 1; got = rest() {
		rests++
		if want := int(gcRestMax/gcPoll) + 1; got > want {
			t.Fatalf("A rest of %d reads, over gcRestMax's %d", got, want)
		}
	}
	if most := int(gcCycleRestMax/gcRestMax) + 1; rests < 1 || rests > most || c.rested < gcCycleRestMax {
		t.Errorf("Near for the whole cycle: %d rests (1 to %d) of %v in all (gcCycleRestMax %v)", rests, most, c.rested, gcCycleRestMax)
	}
	cycles++ // a cycle ended, its garbage not yet swept: still near
	if got := rest(); got != 1 {
		t.Errorf("Unswept after a cycle: %d reads, want 1 (no rest)", got)
	}
	near = false
	rest()
	near = true
	calls := 0
	c.state = func() (bool, uint64) { calls++; return calls < 3, cycles }
	if !c.wait(nil) || calls != 3 {
		t.Errorf("Near for two polls in a new cycle: %d reads, want 3", calls)
	}
	c.state = func() (bool, uint64) { return true, cycles }
	stop := make(chan struct{})
	close(stop)
	if c.wait(stop) {
		t.Error("Stopped while resting: wait went on")
	}
	c.on = false // more than one processor: never rests
	if !c.wait(stop) {
		t.Error("Off: wait rested")
	}
}
