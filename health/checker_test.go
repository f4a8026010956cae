package health

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// endpoint is a controllable probe endpoint that counts its hits.
type endpoint struct {
	*httptest.Server
	hits   atomic.Int64
	status atomic.Int64
	body   atomic.Value // string
}

func newEndpoint(t *testing.T, body string) *endpoint {
	t.Helper()
	e := &endpoint{}
	e.status.Store(http.StatusOK)
	e.body.Store(body)
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.hits.Add(1)
		w.WriteHeader(int(e.status.Load()))
		io.WriteString(w, e.body.Load().(string))
	}))
	t.Cleanup(e.Close)
	return e
}

// waitFor polls cond, failing the test after a bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitFor(t, what, func() (bool, string) { return cond(), "" })
}

// liveTimeout bounds the probes of endpoints that answer: far above what
// an answer takes on a loaded machine, so that only a hang times out.
const liveTimeout = 10 * time.Second

// fastSpec probes often; a live endpoint's probe never times out.
func fastSpec(url string) Spec {
	return Spec{URL: url, Interval: Duration(40 * time.Millisecond), Timeout: Duration(liveTimeout),
		Rise: 2, Fall: 2, HoldDown: durp(time.Minute)}
}

func stateIs(c *Checker, id string, want State) func() bool {
	return func() bool { st, _ := c.Snapshot().Status(id); return st.State == want }
}

func TestCheckerHoldDown(t *testing.T) {
	e := newEndpoint(t, "ok")
	clock := testsupport.NewClock()
	c := New([]Target{{ID: "a", Spec: fastSpec(e.URL)}}, Options{Now: clock.Now}, nil)
	c.Start()
	defer c.Stop()

	waitFor(t, "a up", stateIs(c, "a", StateUp))
	e.status.Store(http.StatusServiceUnavailable)
	waitFor(t, "a down", stateIs(c, "a", StateDown))
	st, _ := c.Snapshot().Status("a")
	if st.Reason != ReasonStatus || !st.Since.Equal(clock.Now()) {
		t.Fatalf("Expected reason status since %v, got %+v", clock.Now(), st)
	}

	// Probes pass, but hold_down has not elapsed on the state machine's clock.
	e.status.Store(http.StatusOK)
	h := e.hits.Load()
	waitFor(t, "passing probes", func() bool { return e.hits.Load() >= h+5 })
	if st, _ := c.Snapshot().Status("a"); st.State != StateDown {
		t.Fatalf("Expected a to stay down during hold_down, got %s", st.State)
	}

	clock.Add(time.Minute)
	waitFor(t, "a up after hold_down", stateIs(c, "a", StateUp))
	if st, _ := c.Snapshot().Status("a"); st.Reason != "" || !st.Since.Equal(clock.Now()) {
		t.Errorf("Expected a clean up status since %v, got %+v", clock.Now(), st)
	}
}

func TestCheckerRise(t *testing.T) {
	e := newEndpoint(t, "ok")
	e.status.Store(http.StatusInternalServerError)
	spec := fastSpec(e.URL)
	spec.Rise = 3
	var upHits atomic.Int64
	c := New([]Target{{ID: "a", Spec: spec}}, Options{}, func(s *Snapshot) {
		if st, _ := s.Status("a"); st.State == StateUp {
			upHits.Store(e.hits.Load())
		}
	})
	c.Start()
	defer c.Stop()

	// The first failure takes the node down at once, without hold-down.
	waitFor(t, "a down", stateIs(c, "a", StateDown))
	downHits := e.hits.Load()
	e.status.Store(http.StatusOK)
	waitFor(t, "a up", stateIs(c, "a", StateUp))
	if got := upHits.Load(); got < downHits+int64(spec.Rise) {
		t.Errorf("Expected at least %d successes before up, got %d", spec.Rise, got-downHits)
	}
}

func TestCheckerReasons(t *testing.T) {
	e := newEndpoint(t, "welcome")
	bad := newEndpoint(t, "ok")
	bad.status.Store(http.StatusBadGateway)
	hang := newHangServer(t)
	tests := []struct {
		id     string
		spec   Spec
		reason string
	}{
		{"body", Spec{URL: e.URL, ExpectBody: "ok"}, ReasonBody},
		{"status", Spec{URL: bad.URL}, ReasonStatus},
		{"connect", Spec{Address: closedAddr(t)}, ReasonConnect},
		{"timeout", Spec{URL: "http://" + hang.addr()}, ReasonTimeout},
	}
	var targets []Target
	for _, tc := range tests {
		s := tc.spec
		// Only the hang times out: the others fail for their own reason
		// however slowly the machine answers.
		s.Interval, s.Timeout, s.Fall = Duration(100*time.Millisecond), Duration(liveTimeout), 1
		if tc.reason == ReasonTimeout {
			s.Timeout = Duration(50 * time.Millisecond)
		}
		targets = append(targets, Target{ID: tc.id, Spec: s})
	}
	c := New(targets, Options{}, nil)
	c.Start()
	defer c.Stop()
	waitFor(t, "first round", c.Ready)
	for _, tc := range tests {
		st, ok := c.Snapshot().Status(tc.id)
		if !ok || st.State != StateDown || st.Reason != tc.reason {
			t.Errorf("Test %q: expected down with reason %s, got %+v", tc.id, tc.reason, st)
		}
		if n := testutil.ToFloat64(probeFailures.WithLabelValues(tc.id, tc.reason)); n < 1 {
			t.Errorf("Test %q: expected a %s failure counted, got %v", tc.id, tc.reason, n)
		}
	}
	if _, ok := c.Snapshot().Status("other"); ok {
		t.Errorf("Expected an unprobed node to be absent")
	}
}

func TestCheckerHangDoesNotDelayOthers(t *testing.T) {
	hang := newHangServer(t)
	fast := newEndpoint(t, "ok")
	// The hang's probe is pending for 3s: fast's three probes, 40ms apart,
	// fit in it on a loaded machine.
	slow := Spec{URL: "http://" + hang.addr(), Interval: Duration(3 * time.Second), Timeout: Duration(3 * time.Second), Fall: 1}
	c := New([]Target{{ID: "hang", Spec: slow}, {ID: "fast", Spec: fastSpec(fast.URL)}}, Options{}, nil)
	c.Start()
	defer c.Stop()

	done := <-hang.accepted
	start := fast.hits.Load()
	for fast.hits.Load() < start+3 {
		select {
		case <-done:
			t.Fatalf("Expected 3 probes of fast while hang's probe is pending, got %d", fast.hits.Load()-start)
		case <-time.After(5 * time.Millisecond):
		}
	}
	waitFor(t, "hang down", stateIs(c, "hang", StateDown))
	if st, _ := c.Snapshot().Status("hang"); st.Reason != ReasonTimeout {
		t.Errorf("Expected reason timeout, got %q", st.Reason)
	}
	if st, _ := c.Snapshot().Status("fast"); st.State != StateUp {
		t.Errorf("Expected fast up, got %s", st.State)
	}
}

func TestCheckerLoad(t *testing.T) {
	e := newEndpoint(t, `{"load": 0.95}`)
	spec := fastSpec(e.URL)
	spec.LoadField, spec.Fall = "load", 1
	c := New([]Target{{ID: "loaded", Spec: spec}}, Options{}, nil)
	c.Start()
	defer c.Stop()

	waitFor(t, "load reported", func() bool { st, _ := c.Snapshot().Status("loaded"); return st.HasLoad })
	if st, _ := c.Snapshot().Status("loaded"); st.State != StateUp || st.Load != 0.95 {
		t.Fatalf("Expected up with load 0.95, got %+v", st)
	}
	e.status.Store(http.StatusServiceUnavailable)
	waitFor(t, "loaded down", stateIs(c, "loaded", StateDown))
	if st, _ := c.Snapshot().Status("loaded"); !st.HasLoad || st.Load != 0.95 {
		t.Errorf("Expected the last load 0.95 kept after a failure, got %+v", st)
	}
	if v := testutil.ToFloat64(nodeLoad.WithLabelValues("loaded")); v != 0.95 {
		t.Errorf("Expected node_load 0.95, got %v", v)
	}
	if v := testutil.ToFloat64(nodeUp.WithLabelValues("loaded")); v != 0 {
		t.Errorf("Expected node_up 0, got %v", v)
	}
}

func TestCheckerReady(t *testing.T) {
	fast := newEndpoint(t, "ok")
	gate := make(chan struct{})
	arrived := make(chan struct{}, 1)
	gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}))
	defer gated.Close()
	slow := Spec{URL: gated.URL, Interval: Duration(5 * time.Second), Timeout: Duration(5 * time.Second)}

	var inside atomic.Bool
	var calls atomic.Int64
	c := New([]Target{{ID: "fast", Spec: fastSpec(fast.URL)}, {ID: "gated", Spec: slow}}, Options{}, func(*Snapshot) {
		if inside.Swap(true) {
			t.Errorf("Expected onChange never to run concurrently")
		}
		calls.Add(1)
		inside.Store(false)
	})
	if c.Ready() {
		t.Fatalf("Expected not ready before Start")
	}
	if st, _ := c.Snapshot().Status("gated"); st.State != StateUnknown {
		t.Fatalf("Expected unknown before Start, got %s", st.State)
	}
	c.Start()
	defer c.Stop()
	<-arrived
	waitFor(t, "fast up", stateIs(c, "fast", StateUp))
	if c.Ready() {
		t.Fatalf("Expected not ready while gated has no result")
	}
	close(gate)
	waitFor(t, "ready", c.Ready)
	if st, _ := c.Snapshot().Status("gated"); st.State != StateUp {
		t.Errorf("Expected gated up, got %s", st.State)
	}
	if calls.Load() < 2 {
		t.Errorf("Expected an onChange per first result, got %d", calls.Load())
	}

	empty := New(nil, Options{}, nil)
	if !empty.Ready() {
		t.Errorf("Expected a checker without targets to be ready")
	}
}

func TestCheckerOnChangeOnlyOnChange(t *testing.T) {
	e := newEndpoint(t, `{"load": 0.5}`)
	spec := fastSpec(e.URL)
	spec.LoadField = "load"
	var calls atomic.Int64
	var last atomic.Pointer[Snapshot]
	c := New([]Target{{ID: "steady", Spec: spec}}, Options{}, func(s *Snapshot) { calls.Add(1); last.Store(s) })
	c.Start()
	defer c.Stop()

	waitFor(t, "steady up", stateIs(c, "steady", StateUp))
	h := e.hits.Load()
	waitFor(t, "more probes", func() bool { return e.hits.Load() >= h+5 })
	if n := calls.Load(); n != 1 {
		t.Fatalf("Expected 1 onChange while nothing changes, got %d", n)
	}
	if last.Load() != c.Snapshot() {
		t.Errorf("Expected onChange to get the published snapshot")
	}
	e.body.Store(`{"load": 0.7}`)
	waitFor(t, "load change published", func() bool { return calls.Load() == 2 })
	if st, _ := c.Snapshot().Status("steady"); st.Load != 0.7 {
		t.Errorf("Expected load 0.7, got %v", st.Load)
	}
}

func TestCheckerLifecycleNoLeaks(t *testing.T) {
	e := newEndpoint(t, "ok")
	hang := newHangServer(t)
	closed := closedAddr(t)
	before := runtime.NumGoroutine()

	for i := range 4 {
		c := New([]Target{
			{ID: "up", Spec: fastSpec(e.URL)},
			{ID: "hang", Spec: Spec{URL: "http://" + hang.addr(), Interval: Duration(300 * time.Millisecond), Timeout: Duration(300 * time.Millisecond)}},
			{ID: "closed", Spec: Spec{Address: closed, Interval: Duration(20 * time.Millisecond), Timeout: Duration(20 * time.Millisecond)}},
		}, Options{}, nil)
		c.Start()
		c.Start()
		waitFor(t, fmt.Sprintf("cycle %d: up", i), stateIs(c, "up", StateUp))
		<-hang.accepted // a probe is in flight when Stop comes
		c.Stop()
		c.Stop()
	}
	never := New([]Target{{ID: "never", Spec: fastSpec(e.URL)}}, Options{}, nil)
	never.Stop()
	never.Start()
	if never.Ready() {
		t.Errorf("Expected a stopped checker never to start")
	}

	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(testsupport.WaitTimeout); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	if after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("Expected at most %d goroutines after Start/Stop cycles, got %d\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// hasSeries reports whether the metric family name holds a series for node.
func hasSeries(t *testing.T, name, node string) bool {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == node {
					return true
				}
			}
		}
	}
	return false
}

func TestMetricsSurviveReload(t *testing.T) {
	e := newEndpoint(t, "ok")
	targets := []Target{{ID: "reloaded", Spec: fastSpec(e.URL)}}
	old := New(targets, Options{}, nil)
	old.Start()
	waitFor(t, "old up", stateIs(old, "reloaded", StateUp))

	// As on reload: the new checker starts before the old one stops.
	cur := New(targets, Options{}, nil)
	cur.Start()
	old.Stop()
	waitFor(t, "new up", stateIs(cur, "reloaded", StateUp))
	names := []string{"coredns_gslb_node_up", "coredns_gslb_probe_duration_seconds", "coredns_gslb_node_transitions_total"}
	for _, n := range names {
		if !hasSeries(t, n, "reloaded") {
			t.Errorf("Expected %s of a live node to survive the old checker's stop", n)
		}
	}
	cur.Stop()
	for _, n := range names {
		if hasSeries(t, n, "reloaded") {
			t.Errorf("Expected %s of a dropped node to be deleted", n)
		}
	}
}

// TestCheckerKeepsError: a node down keeps the text of the failure that
// took it down, and loses it when it is back up.
func TestCheckerKeepsError(t *testing.T) {
	e := newEndpoint(t, "ok")
	spec := Spec{URL: e.URL, Interval: Duration(time.Second), Timeout: Duration(900 * time.Millisecond), Rise: 1, Fall: 1, HoldDown: durp(0)}
	c := New([]Target{{ID: "err", Spec: spec}}, Options{}, nil)
	c.Start()
	defer c.Stop()
	waitFor(t, "err up", stateIs(c, "err", StateUp))
	e.status.Store(http.StatusServiceUnavailable)
	waitFor(t, "err down", stateIs(c, "err", StateDown))
	if st, _ := c.Snapshot().Status("err"); st.Reason != ReasonStatus || st.Error != "status 503" {
		t.Errorf("Down: %+v, want reason status and text status 503", st)
	}
	e.status.Store(http.StatusOK)
	waitFor(t, "err up again", stateIs(c, "err", StateUp))
	if st, _ := c.Snapshot().Status("err"); st.Error != "" {
		t.Errorf("Up: the failure's text %q stayed", st.Error)
	}
}

// TestCheckerCoalescesLoads: results that change a node's load but not its
// state publish at most one snapshot per coalesce, the latest load
// included; a change of state publishes at once.
func TestCheckerCoalescesLoads(t *testing.T) {
	var hits, fixed atomic.Int64
	fixed.Store(-1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if f := fixed.Load(); f >= 0 {
			n = f
		}
		fmt.Fprintf(w, `{"load": %.2f}`, float64(n%100)/100)
	}))
	defer srv.Close()
	spec := fastSpec(srv.URL)
	spec.Interval = Duration(5 * time.Millisecond)
	spec.LoadField = "load"
	var calls atomic.Int64
	c := New([]Target{{ID: "n", Spec: spec}}, Options{}, func(*Snapshot) { calls.Add(1) })
	c.Start()
	defer c.Stop()

	waitFor(t, "n up", stateIs(c, "n", StateUp))
	start, h0, c0 := time.Now(), hits.Load(), calls.Load()
	waitFor(t, "40 more loads", func() bool { return hits.Load() >= h0+40 })
	elapsed, published := time.Since(start), calls.Load()-c0
	if most := int64(elapsed/coalesce) + 2; published > most {
		t.Errorf("Expected at most %d snapshots for %d loads in %v, got %d", most, hits.Load()-h0, elapsed, published)
	}
	fixed.Store(42)
	waitFor(t, "the last load published", func() bool { st, _ := c.Snapshot().Status("n"); return st.Load == 0.42 })
}
