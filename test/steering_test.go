package test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// loadTarget is a probe endpoint that reports a load the test sets.
type loadTarget struct {
	srv  *httptest.Server
	load atomic.Value // string, e.g. "0.30"
	down atomic.Bool
}

func newLoadTarget(t *testing.T, load string) *loadTarget {
	lt := &loadTarget{}
	lt.load.Store(load)
	lt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lt.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"load": %s}`, lt.load.Load())
	}))
	t.Cleanup(lt.srv.Close)
	return lt
}

// steeringDBs places 58.0.0.0/12 in Zhejiang on China Telecom (4096
// distinct /24s) and 59.0.0.0/16 in Zhejiang on China Unicom.
func steeringDBs(t *testing.T, dir string) (city, asn string) {
	return testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "58.0.0.0/12", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
		{Network: "59.0.0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	}, []mmdbgen.ASN{
		{Network: "58.0.0.0/12", ASN: 4134, Org: "CHINANET"},
		{Network: "59.0.0.0/16", ASN: 4837, Org: "CHINA UNICOM China169 Backbone"},
	})
}

// zjNode is a Zhejiang telecom node probed at url, reporting its load.
func zjNode(id, addr, url string) string {
	return fmt.Sprintf(`  - {id: %s, ipv4: [%s], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16,
     probe: {url: "%s", load_field: load, interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}}
`, id, addr, url)
}

// waitLoad waits until the nodes' probes reported load, and the view
// holds it: the admin API at admin reads the nodes' load from the view.
func waitLoad(t *testing.T, admin, load string, ids ...string) {
	t.Helper()
	e := &adminEnv{addr: admin}
	for _, id := range ids {
		waitFor(t, id+"'s load "+load, func() (bool, string) {
			v := counterValue(t, "coredns_gslb_node_load", "node", id)
			return fmt.Sprint(v) == load, fmt.Sprint(v)
		})
		waitFor(t, "the view holding "+id+"'s load "+load, func() (bool, string) {
			v := e.nodes(t)[id].Load
			return fmt.Sprint(v) == load, fmt.Sprint(v)
		})
	}
}

// shares asks for n /24s of 58.0.0.0/12 and counts the answers by address.
func shares(t *testing.T, s *server, n int) (map[string]int, []string) {
	t.Helper()
	got, who := map[string]int{}, make([]string, n)
	for i := range n {
		who[i] = answerOf(ask(t, s, "www.example.org", dns.TypeA, fmt.Sprintf("58.%d.%d.0/24", i/256, i%256)))
		got[who[i]]++
	}
	return got, who
}

// TestSpreadThroughCoreDNS: three equal nodes share the subnets (per /24
// with spread_prefix 24); a load change on one moves a few subnets, all
// away from it.
func TestSpreadThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	a, b, c := newLoadTarget(t, "0.30"), newLoadTarget(t, "0.30"), newLoadTarget(t, "0.30")
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+zjNode("hz-1", "192.0.2.1", a.srv.URL)+
		zjNode("hz-2", "192.0.2.2", b.srv.URL)+zjNode("hz-3", "192.0.2.3", c.srv.URL)+"records:\n  - name: www.example.org\n")
	admin := testsupport.FreeAddr(t)
	s := startServer(t, corefile(city, asn, nodes, "spread_prefix 24\nadmin "+admin))
	waitLoad(t, admin, "0.3", "hz-1", "hz-2", "hz-3")
	const n = 3000
	before, was := shares(t, s, n)
	for _, addr := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		if f := float64(before[addr]) / n; math.Abs(f-1.0/3) > 0.05 {
			t.Errorf("%s got %.1f%% of the subnets, want 33%% ± 5%%", addr, 100*f)
		}
	}
	a.load.Store("0.35")
	waitLoad(t, admin, "0.35", "hz-1")
	after, is := shares(t, s, n)
	moved := 0
	for i := range is {
		if is[i] != was[i] {
			moved++
			if was[i] != "192.0.2.1" {
				t.Errorf("Subnet %d moved from %s to %s: only hz-1's may move", i, was[i], is[i])
			}
		}
	}
	if moved > n/10 {
		t.Errorf("%d of %d subnets moved, want at most 10%%", moved, n)
	}
	t.Logf("Before %v, after %v: %d moved", before, after, moved)
	r := ask(t, s, "www.example.org", dns.TypeA, "58.0.7.0/24")
	if e := replyECS(r); e == nil || e.SourceScope != 24 {
		t.Errorf("A spread answer's scope is %v, want /24", e)
	}
}

// TestShedAndCooldownThroughCoreDNS: a node between the watermarks sends a
// share of its subnets to the next tier; a node back from down takes its
// subnets back over the cooldown, not at once.
func TestShedAndCooldownThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	hz, sh := newLoadTarget(t, "0.30"), newLoadTarget(t, "0.10")
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+zjNode("hz-1", "192.0.2.1", hz.srv.URL)+
		fmt.Sprintf(`  - {id: sh-1, ipv4: [192.0.2.9], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47,
     probe: {url: "%s", load_field: load, interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}}
records:
  - name: www.example.org
`, sh.srv.URL))
	// A cooldown long enough for several samples of 256 queries even on a
	// loaded machine.
	const cooldown = 10 * time.Second
	s := startServer(t, corefile(city, asn, nodes, fmt.Sprintf("shed_load 0.6 0.9\ncooldown %v", cooldown)))
	kept := func() int { got, _ := shares(t, s, 256); return got["192.0.2.1"] }
	waitFor(t, "hz-1 serving Zhejiang", func() (bool, string) { n := kept(); return n == 256, fmt.Sprint(n) })

	// Load 0.75, half way between the watermarks: about half the subnets go
	// to Shanghai.
	hz.load.Store("0.75")
	waitFor(t, "hz-1 shedding", func() (bool, string) { n := kept(); return n > 90 && n < 166, fmt.Sprint(n) })
	hz.load.Store("0.95")
	waitFor(t, "hz-1 above the high watermark", func() (bool, string) { n := kept(); return n == 0, fmt.Sprint(n) })

	// Down, then up: the share comes back over the cooldown.
	hz.load.Store("0.30")
	hz.down.Store(true)
	waitFor(t, "hz-1 down", func() (bool, string) {
		v := counterValue(t, "coredns_gslb_node_up", "node", "hz-1")
		return v == 0, fmt.Sprint(v)
	})
	hz.down.Store(false)
	var seen []int
	deadline := time.Now().Add(cooldown + testsupport.WaitTimeout)
	for n := 0; n < 256 && time.Now().Before(deadline); {
		n = kept()
		seen = append(seen, n)
		time.Sleep(150 * time.Millisecond)
	}
	partial := 0
	for i, n := range seen {
		if n > 0 && n < 256 {
			partial++
		}
		if i > 0 && n < seen[i-1] {
			t.Errorf("The ramp went back from %d to %d subnets: %v", seen[i-1], n, seen)
		}
	}
	if seen[len(seen)-1] != 256 || partial < 5 {
		t.Errorf("Subnets back on hz-1 over time: %v; want a gradual return to 256", seen)
	}
	t.Logf("Subnets back on hz-1, sampled 150ms apart over the cooldown: %v", seen)
}

// TestAnswersAndQualityThroughCoreDNS: answers 2 returns two nodes; 30% loss
// from Zhejiang telecom to a node moves Zhejiang telecom clients away from
// it, and only them.
func TestAnswersAndQualityThroughCoreDNS(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30.27, lon: 120.16}
  - {id: sh-1, ipv4: [192.0.2.9], country: CN, province: SH, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
  - name: two.example.org
`)
	q := writeFile(t, dir, "quality.yaml", "quality: []\n")
	s := startServer(t, corefile(city, asn, nodes, "quality "+q+"\nreload 1s\nspread 0"))
	two := startServer(t, corefile(city, asn, nodes, "answers 2"))
	if r := ask(t, two, "two.example.org", dns.TypeA, "58.0.1.0/24"); len(r.Answer) != 2 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" {
		t.Errorf("answers 2: %v, want hz-1 then sh-1", r.Answer)
	}
	for _, ecs := range []string{"58.0.1.0/24", "59.0.1.0/24"} {
		if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, ecs)); got != "192.0.2.1" {
			t.Fatalf("%s before the quality rows: %s, want hz-1", ecs, got)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	writeFile(t, dir, "quality.yaml", fmt.Sprintf(`quality:
  - {from: {province: ZJ, isp: telecom}, node: hz-1, rtt_ms: 8, loss: 0.3, measured: %s}
  - {from: {province: ZJ, isp: telecom}, node: sh-1, rtt_ms: 20, loss: 0, measured: %s}
`, now, now))
	waitFor(t, "ZJ telecom moved to sh-1", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "58.0.1.0/24"))
		return got == "192.0.2.9", got
	})
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "59.0.1.0/24")); got != "192.0.2.1" {
		t.Errorf("ZJ unicom: %s, want hz-1 still", got)
	}
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "58.0.2.0/24"))
	checkLabels(t, l, map[string]string{"rtt_ms": "20", "node": "sh-1"})
	if v := counterValue(t, "coredns_gslb_quality_rows", "state", "fresh"); v != 2 {
		t.Errorf("quality_rows{state=fresh} = %v, want 2", v)
	}
}
