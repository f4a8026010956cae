package control

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

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
	g := newFixtureControl(t, nodes, "cooldown 0s\nprecompute 64MiB\n")
	warmed := func(what string) {
		testsupport.WaitFor(t, what, func() (bool, string) {
			v := g.View()
			return g.warmer.warmed.Load() == v && testutil.ToFloat64(precomputedDecisions) > 0,
				fmt.Sprintf("%v decisions", testutil.ToFloat64(precomputedDecisions))
		})
	}
	warmed("the first view warmed")
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
	warmed("the health change's view warmed")
	if g.warmer.warmed.Load() == first {
		t.Errorf("The health change's view is the first one")
	}
}

// TestPrecomputedCanaryView: with a canary, the candidate table's view is
// warmed too, into the canary's own cache, and a health change warms the
// new views of both tables again; the gauges say what each cache holds.
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
	warmed := func(what string, stableRecords int) *policy.View {
		var cv *policy.View
		testsupport.WaitFor(t, what, func() (bool, string) {
			cv = cn.View.Load()
			ok := g.warmer.warmed.Load() == g.View() && g.warmer.canary.Load() == cv && cv != nil &&
				testutil.ToFloat64(canaryDecisions) == float64(cv.Held()) && cv.Held() > 0
			return ok, fmt.Sprintf("canary gauge %v, held %d", testutil.ToFloat64(canaryDecisions), cv.Held())
		})
		// The candidate has two records: its cache holds a decision for
		// each of a client's, the stable one's for each of the table's.
		if stable := g.View().Held(); stableRecords == 1 && cv.Held() <= stable || stableRecords == 2 && stable < cv.Held() {
			t.Errorf("%s: the canary's cache holds %d decisions, the stable one's %d", what, cv.Held(), stable)
		}
		return cv
	}
	first := warmed("the first views warmed", 1)
	a.up.Store(false)
	waitAnswer(t, g, "www.example.org", "1.0.1.0/24", "192.0.2.2")
	again := warmed("the health change's views warmed", 1)
	if again == first {
		t.Errorf("The canary's view was not rebuilt")
	}
	// A node table reload: the stable table gets the second record, and
	// its new view is warmed for both.
	stable := g.View()
	touch(t, filepath.Join(dir, "nodes.yaml"), cand, 1)
	reloadSettled(g)
	if g.View() == stable || g.View().PerClient() != 2 {
		t.Fatalf("The reload was not published")
	}
	warmed("the reload's views warmed", 2)
}
