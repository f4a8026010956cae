package health

import (
	"net/http"
	"testing"
	"time"
)

// A Checker that replaces another on the same pool keeps the verdicts of
// the probes whose spec did not change, and inherits the verdict of a node
// whose spec changed until the new probe decides.
func TestPoolKeepsVerdicts(t *testing.T) {
	down := newEndpoint(t, "ok")
	down.status.Store(http.StatusServiceUnavailable)
	up := newEndpoint(t, "ok")
	pool := NewPool(Options{})
	spec := func(url string) Spec { s := fastSpec(url); s.HoldDown = durp(0); return s.WithDefaults(Spec{}) }

	old := pool.NewChecker([]Target{{ID: "down", Spec: spec(down.URL)}, {ID: "up", Spec: spec(up.URL)}}, nil)
	old.Start()
	waitFor(t, "down is down", stateIs(old, "down", StateDown))
	waitFor(t, "up is up", stateIs(old, "up", StateUp))

	// Same spec for "down", a longer interval for "up".
	changed := spec(up.URL)
	changed.Interval = Duration(80 * time.Millisecond)
	cur := pool.NewChecker([]Target{{ID: "down", Spec: spec(down.URL)}, {ID: "up", Spec: changed}}, nil)
	for _, id := range []string{"down", "up"} {
		want := StateDown
		if id == "up" {
			want = StateUp
		}
		if st, _ := cur.Snapshot().Status(id); st.State != want {
			t.Errorf("Before Start: %s is %s, want %s", id, st.State, want)
		}
	}
	if !cur.Ready() {
		t.Errorf("Expected a checker whose nodes all have verdicts to be ready")
	}
	cur.Start()
	old.Stop()
	defer cur.Stop()

	// The unchanged probe keeps running once: about one hit per interval.
	// Six probes of "up", every 80ms from the first, span the 400ms the
	// bound is for.
	h, hu := down.hits.Load(), up.hits.Load()
	waitFor(t, "six more probes of up", func() bool { return up.hits.Load()-hu >= 6 })
	if n := down.hits.Load() - h; n > 14 {
		t.Errorf("Expected one probe of the unchanged node (about 10 hits in 400ms), got %d", n)
	}
	if st, _ := cur.Snapshot().Status("down"); st.State != StateDown {
		t.Errorf("Expected down to stay down, got %s", st.State)
	}
	down.status.Store(http.StatusOK)
	waitFor(t, "down recovers", stateIs(cur, "down", StateUp))
}

// A node whose new probe spec fails takes the usual fall probes to go down:
// the inherited verdict is not thrown away by the first result.
func TestPoolInheritedVerdictNeedsFall(t *testing.T) {
	e := newEndpoint(t, "ok")
	pool := NewPool(Options{})
	s := fastSpec(e.URL).WithDefaults(Spec{})
	s.Fall = 3
	old := pool.NewChecker([]Target{{ID: "a", Spec: s}}, nil)
	old.Start()
	waitFor(t, "a up", stateIs(old, "a", StateUp))

	bad := s
	bad.URL = e.URL + "/other"
	bad.ExpectBody = "nope"
	cur := pool.NewChecker([]Target{{ID: "a", Spec: bad}}, nil)
	h := e.hits.Load()
	cur.Start()
	old.Stop()
	defer cur.Stop()
	waitFor(t, "a down with the new spec", stateIs(cur, "a", StateDown))
	if n := e.hits.Load() - h; n < 3 {
		t.Errorf("Expected at least fall=3 probes before down, got %d", n)
	}
}
