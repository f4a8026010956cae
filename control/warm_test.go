package control

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPrecomputedViews: once the databases' networks are walked and the
// view is warmed, a /24 never seen is located from the table (its counter
// moves) and answered as without it; a health change's view is warmed in
// turn, and answers the change.
func TestPrecomputedViews(t *testing.T) {
	a, b := newTarget(t), newTarget(t)
	probe := "probe: {url: %s, expect_body: ok, load_field: load}"
	nodes := fmt.Sprintf(`
probe_defaults: {interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}
nodes:
  - {id: zj-telecom, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, `+probe+`}
  - {id: zj-unicom, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16, `+probe+`}
records:
  - name: www.example.org
`, a.URL, b.URL)
	start := time.Now()
	g := newFixtureControl(t, nodes, "cooldown 0s\nprecompute 64MiB\n")
	// The first view warmed holds the decisions of all the clients until
	// a later one is warmed, at least 5 s on.
	all := 0
	testsupport.WaitFor(t, "the first view warmed", func() (bool, string) {
		if w := g.warmer.warmed.Load(); w != nil {
			all = w.Held()
		}
		return all > 0, fmt.Sprintf("%d decisions", all)
	})
	testsupport.WaitFor(t, "readiness", func() (bool, string) { return g.Ready(), "not ready" })
	if testutil.ToFloat64(locate.PrecomputedRanges) == 0 {
		t.Fatalf("No precomputed ranges")
	}
	hits := locate.GeoLookups.WithLabelValues("precomputed", "hit")
	before := testutil.ToFloat64(hits)
	waitAnswer(t, g, "www.example.org", "1.0.1.0/24", "192.0.2.1") // Zhejiang, China Telecom
	// A /24 no other test of the package asks for: the location cache is
	// the process's.
	if got := answerOf(t, g, "www.example.org", "1.0.213.0/24"); got == "" {
		t.Fatalf("No answer for 1.0.213.0/24")
	}
	if testutil.ToFloat64(hits) == before {
		t.Errorf("A fresh /24 was not located from the precomputed table")
	}

	first := g.View()
	a.up.Store(false)
	waitAnswer(t, g, "www.example.org", "1.0.1.0/24", "192.0.2.2")
	testsupport.WaitFor(t, "the health change's view warmed", func() (bool, string) {
		v := g.View()
		return g.warmer.warmed.Load() == v && testutil.ToFloat64(precomputedDecisions) == float64(v.Held()),
			fmt.Sprintf("%v decisions", testutil.ToFloat64(precomputedDecisions))
	})
	if g.warmer.warmed.Load() == first {
		t.Errorf("The health change's view is the first one")
	}
	// Within a minute of the first, the warm-up prepared the clients
	// asked for (the one asked under the view at least), not all again.
	if asked := g.View().Held(); asked == 0 || time.Since(start) < fullWarmEvery && asked >= all {
		t.Errorf("The health change's view holds %d decisions, the first %d", asked, all)
	}
}

// TestFullDue: a warm-up prepares all the clients while one is owed (new
// clients, until one ends), else a minute after the last that started.
func TestFullDue(t *testing.T) {
	var f fullWarm
	now := time.Now()
	for _, step := range []struct {
		at         time.Duration
		owed, want bool
	}{{0, false, true}, {time.Second, false, false}, {2 * time.Second, true, true}, {3 * time.Second, true, true},
		{4 * time.Second, false, false}, {fullWarmEvery, false, false}, {fullWarmEvery + 3*time.Second, false, true}} {
		f.owed = step.owed
		if got := f.due(now.Add(step.at)); got != step.want {
			t.Errorf("At %v (owed %v): %v, want %v", step.at, step.owed, got, step.want)
		}
	}
}

// TestPrecomputedCanaryView: with a canary, the candidate table's view is
// warmed too, into the canary's own cache, and a health change and a
// reload warm the new views of both tables again (within the minute, for
// the clients asked alone); the gauges say what each cache holds.
func TestPrecomputedCanaryView(t *testing.T) {
	a, b := newTarget(t), newTarget(t)
	probe := "probe: {url: %s, expect_body: ok, load_field: load}"
	nodes := `
probe_defaults: {interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}
nodes:
  - {id: zj-telecom, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, ` + probe + `}
  - {id: zj-unicom, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16, ` + probe + `}
records:
  - name: www.example.org
`
	dir := fixture(t, fmt.Sprintf(nodes, a.URL, b.URL))
	// The candidate: the same nodes, and a record of its own.
	cand := fmt.Sprintf(nodes, a.URL, b.URL) + "  - name: new.example.org\n"
	if err := os.WriteFile(filepath.Join(dir, "candidate.yaml"), []byte(cand), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "cooldown 0s\nreload 0\nprecompute 64MiB\ncanary candidate.yaml 10\n"))
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	cn := g.Canary()
	warmed := func(what string) *policy.View {
		var cv *policy.View
		testsupport.WaitFor(t, what, func() (bool, string) {
			cv = cn.View.Load()
			ok := g.warmer.warmed.Load() == g.View() && g.warmer.canary.Load() == cv && cv != nil &&
				testutil.ToFloat64(canaryDecisions) == float64(cv.Held()) &&
				testutil.ToFloat64(precomputedDecisions) == float64(g.View().Held())
			return ok, fmt.Sprintf("canary gauge %v, held %d", testutil.ToFloat64(canaryDecisions), cv.Held())
		})
		return cv
	}
	// The first views warmed hold all the clients' decisions until later
	// ones are warmed, at least 5 s on; a probe's first result may bring
	// those already.
	var first *policy.View
	stable, canaried := 0, 0
	testsupport.WaitFor(t, "the first views warmed", func() (bool, string) {
		w, cw := g.warmer.warmed.Load(), g.warmer.canary.Load()
		if w != nil && cw != nil {
			first, stable, canaried = cw, w.Held(), cw.Held()
		}
		return stable > 0 && canaried > 0, fmt.Sprintf("held %d and %d", stable, canaried)
	})
	// The candidate has two records: its cache holds a decision for each
	// of a client's, the stable one's for each of the table's.
	if canaried <= stable {
		t.Errorf("The canary's cache holds %d decisions, the stable one's %d", canaried, stable)
	}
	a.up.Store(false)
	waitAnswer(t, g, "www.example.org", "1.0.1.0/24", "192.0.2.2")
	again := warmed("the health change's views warmed")
	if again == first {
		t.Errorf("The canary's view was not rebuilt")
	}
	// A node table reload: the stable table gets the second record, and
	// its new view is warmed for both.
	before := g.View()
	touch(t, filepath.Join(dir, "nodes.yaml"), cand, 1)
	reloadSettled(g)
	if g.View() == before || g.View().PerClient() != 2 {
		t.Fatalf("The reload was not published")
	}
	warmed("the reload's views warmed")
}
