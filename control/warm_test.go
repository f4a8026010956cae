package control

import (
	"fmt"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/locate"

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
