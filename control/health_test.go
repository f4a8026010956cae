package control

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// Probes through the control plane: a verdict moves the decisions of the
// view it publishes (moved here from the plugin's package, which only
// forwards to the Decider).

// newFixtureControl starts a Control of the fixture's databases and nodes,
// with extra lines in its block.
func newFixtureControl(t *testing.T, nodes, extra string) *Control {
	t.Helper()
	c := newTestControl(t, fixture(t, nodes), fmt.Sprintf(fixtureBlock, extra))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// decideFor is c's A decision for name from a client in subnet ecs.
func decideFor(t *testing.T, c *Control, name, ecs string) *decide.Outcome {
	t.Helper()
	cl, err := decide.ParseClient(ecs)
	if err != nil {
		t.Fatal(err)
	}
	out := new(decide.Outcome)
	if err := c.Decider().For(context.Background(), cl, name, dns.TypeA, out); err != nil {
		t.Fatalf("Expected an answer for %s, got %v", name, err)
	}
	return out
}

// target is a real HTTP health endpoint whose health the test switches.
type target struct {
	*httptest.Server
	up atomic.Bool
}

func newTarget(t *testing.T) *target {
	tg := &target{}
	tg.up.Store(true)
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !tg.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"status":"ok","load":0.1}`)
	}))
	t.Cleanup(tg.Close)
	return tg
}

// waitAnswer polls until the answer for ecs is want, within a generous bound.
func waitAnswer(t *testing.T, c *Control, name, ecs, want string) {
	t.Helper()
	deadline := time.Now().Add(testsupport.WaitTimeout)
	var got string
	for time.Now().Before(deadline) {
		if got = answerOf(t, c, name, ecs); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("Expected %s within %v, still %s", want, testsupport.WaitTimeout, got)
}

// While a node is down the answer moves down the ladder: the other node of
// the same province, then a neighbouring province; and back when it recovers.
func TestProbeMovesDownTheLadder(t *testing.T) {
	a, b, c := newTarget(t), newTarget(t), newTarget(t)
	probe := "probe: {url: %s, expect_body: ok, load_field: load}"
	nodes := fmt.Sprintf(`
probe_defaults: {interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}
nodes:
  - {id: zj-telecom, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, `+probe+`}
  - {id: zj-unicom, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16, `+probe+`}
  - {id: sh-unicom, ipv4: [192.0.2.3], country: CN, province: SH, isp: unicom, lat: 31.23, lon: 121.47, `+probe+`}
records:
  - name: www.example.org
`, a.URL, b.URL, c.URL)
	g := newFixtureControl(t, nodes, "cooldown 0s\n") // back at once: no ramp

	const client = "1.0.1.0/24" // Zhejiang, China Telecom
	waitAnswer(t, g, "www.example.org", client, "192.0.2.1")
	a.up.Store(false)
	waitAnswer(t, g, "www.example.org", client, "192.0.2.2")
	b.up.Store(false)
	waitAnswer(t, g, "www.example.org", client, "192.0.2.3")
	a.up.Store(true)
	waitAnswer(t, g, "www.example.org", client, "192.0.2.1")

	// Every node down: fail-open answers with the least-loaded one.
	a.up.Store(false)
	c.up.Store(false)
	deadline := time.Now().Add(testsupport.WaitTimeout)
	for v := g.View(); v.Status[0].State != "down" || v.Status[2].State != "down"; v = g.View() {
		if time.Now().After(deadline) {
			t.Fatalf("Expected every node down within %v, got %v", testsupport.WaitTimeout, v.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := decideFor(t, g, "www.example.org", client)
	n := 0
	for range m.Addresses() {
		n++
	}
	if n != 1 {
		t.Fatalf("Expected fail-open to answer, got %+v", m)
	}
	if !g.Ready() {
		t.Errorf("Expected ready once every node has a probe result")
	}
}

// A probe verdict or a load report is in the very next answer once the
// view that carries it is published: cached decisions of the old view are
// never served. Many /24s first warm the decision cache.
func TestVerdictInNextAnswer(t *testing.T) {
	var up atomic.Bool
	var load atomic.Value
	up.Store(true)
	load.Store("0.1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"status":"ok","load":%s}`, load.Load())
	}))
	t.Cleanup(srv.Close)
	nodes := fmt.Sprintf(`
probe_defaults: {interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}
nodes:
  - {id: zj, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, probe: {url: %s, expect_body: ok, load_field: load}}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
`, srv.URL)
	g := newFixtureControl(t, nodes, "cooldown 0s\nmax_load 0.9\n")

	// waitView polls the published view until ok says the zj node is as
	// the test wants it.
	waitView := func(what string, ok func(s policy.NodeStatus, n scoring.Node) bool) {
		t.Helper()
		deadline := time.Now().Add(testsupport.WaitTimeout)
		for v := g.View(); !ok(v.Status[0], v.Nodes[0]); v = g.View() {
			if time.Now().After(deadline) {
				t.Fatalf("Expected %s within %v, got %+v %+v", what, testsupport.WaitTimeout, v.Status[0], v.Nodes[0])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// every asks for 200 Zhejiang /24s and wants the same node for each.
	every := func(want string) {
		t.Helper()
		for i := range 200 {
			ecs := fmt.Sprintf("1.0.%d.0/24", i)
			if got := answerOf(t, g, "www.example.org", ecs); got != want {
				t.Fatalf("Query %d (%s): expected %s, got %s", i, ecs, want, got)
			}
		}
	}

	waitView("zj up", func(s policy.NodeStatus, n scoring.Node) bool { return s.State == "up" && n.Load < 0.5 })
	every("192.0.2.1")
	every("192.0.2.1") // now from the decision cache

	load.Store("0.95")
	waitView("zj overloaded", func(_ policy.NodeStatus, n scoring.Node) bool { return n.Load > 0.9 })
	every("192.0.2.3")

	load.Store("0.2")
	waitView("zj's load back", func(_ policy.NodeStatus, n scoring.Node) bool { return n.Load < 0.5 })
	every("192.0.2.1")

	up.Store(false)
	waitView("zj down", func(s policy.NodeStatus, _ scoring.Node) bool { return s.State == "down" })
	every("192.0.2.3")
}
