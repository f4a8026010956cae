package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// twoNodes is a table of a Zhejiang and a Shanghai telecom node, each with
// its own probe interval.
func twoNodes(hzURL, hzInterval, shURL, shInterval string) string {
	probe := `{type: http, url: "%s", expect_body: ok, interval: %s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}`
	return fmt.Sprintf(`nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, probe: `+probe+`}
  - {id: sh-telecom, ipv4: [192.0.2.20], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47, probe: `+probe+`}
records:
  - name: www.example.org
`, hzURL, hzInterval, shURL, shInterval)
}

// tally counts a stream of queries: answers by address, and failures
// (timeouts, or any rcode but NOERROR).
type tally struct {
	answers  map[string]int
	failures int
	queries  int
}

func (t *tally) add(o tally) {
	for k, v := range o.answers {
		t.answers[k] += v
	}
	t.failures += o.failures
	t.queries += o.queries
}

// hammer queries s for ecs until d has passed or limit queries were sent.
func hammer(t *testing.T, s func() *server, ecs []string, d time.Duration, limit int) tally {
	t.Helper()
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	res := tally{answers: map[string]int{}}
	for end := time.Now().Add(d); time.Now().Before(end) && res.queries < limit; res.queries++ {
		q := newQuery(t, "www.example.org", dns.TypeA, ecs[res.queries%len(ecs)])
		r, _, err := c.Exchange(q, s().udp)
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			res.failures++
			continue
		}
		res.answers[answerOf(r)]++
	}
	return res
}

// TestDownNodeStaysDownAcrossReloads: a node that probes took out gets no
// answer while the node table or the Corefile is reloaded, whether its
// own probe spec stays or changes.
func TestDownNodeStaysDownAcrossReloads(t *testing.T) {
	const zj, hzAddr, shAddr = "202.101.172.0/24", "192.0.2.10", "192.0.2.20"
	logs := captureLog(t)
	hz, sh := newProbeTarget(t), newProbeTarget(t)
	hz.mode.Store(targetHang)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", twoNodes(hz.url(), "1s", sh.url(), "1s"))
	corefile := func(extra string) string { return gslbCorefile(t, nodes, "reload 1s\ncooldown 0s\n"+extra) }
	s := startServer(t, corefile(""))
	waitState(t, s, logs, zj, shAddr, "up")
	srv := func() *server { return s }

	// Only the other node's probe interval changes: query until a second
	// after the reload.
	writeFile(t, dir, "nodes.yaml", twoNodes(hz.url(), "1s", sh.url(), "1500ms"))
	res := tally{answers: map[string]int{}}
	start := time.Now()
	var reloaded time.Time
	for reloaded.IsZero() || time.Since(reloaded) < time.Second {
		if reloaded.IsZero() && strings.Contains(logs.String(), "Reloaded node table") {
			reloaded = time.Now()
		}
		if res.queries > 200000 || time.Since(start) > testsupport.WaitTimeout {
			t.Fatalf("No reload after %d queries in %v", res.queries, time.Since(start))
		}
		res.add(hammer(t, srv, []string{zj}, 100*time.Millisecond, 500))
	}
	if res.answers[hzAddr] != 0 || res.failures != 0 {
		t.Errorf("Node table reload: %d of %d answers went to the down node, %d failed", res.answers[hzAddr], res.queries, res.failures)
	}

	// A Corefile reload that changes only the TTL.
	s.restart(t, corefile("ttl 30"))
	res = hammer(t, srv, []string{zj}, 1500*time.Millisecond, 2000)
	if res.answers[hzAddr] != 0 || res.failures != 0 {
		t.Errorf("Corefile reload: %d of %d answers went to the down node, %d failed", res.answers[hzAddr], res.queries, res.failures)
	}

	// A Corefile reload whose node table changed the down node's own probe:
	// it keeps its verdict until the new probe reports, and that says down.
	nodes2 := writeFile(t, dir, "nodes2.yaml", twoNodes(hz.url(), "1200ms", sh.url(), "1500ms"))
	s.restart(t, gslbCorefile(t, nodes2, "reload 1s\ncooldown 0s\nttl 30"))
	res = hammer(t, srv, []string{zj}, 1500*time.Millisecond, 2000)
	if res.answers[hzAddr] != 0 || res.failures != 0 {
		t.Errorf("Reload with a new probe spec: %d of %d answers went to the down node, %d failed", res.answers[hzAddr], res.queries, res.failures)
	}

	// And the node comes back when its target does.
	hz.mode.Store(targetOK)
	waitState(t, s, logs, zj, hzAddr, "up")
}

// TestBadNodeTableNeverCrashes: a node table with YAML aliases fails startup
// with an error, and on reload is rejected while the old table serves.
func TestBadNodeTableNeverCrashes(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	const node = "  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120}\n"
	bad := []string{
		"nodes: &n\n" + node + "records: *n\n",
		"records: &r\n  - name: www.example.org\nnodes: *r\n",
	}
	for i, y := range bad {
		p := writeFile(t, dir, fmt.Sprintf("bad%d.yaml", i), y)
		mu.Lock()
		inst, err := caddy.Start(input(gslbCorefile(t, p, "")))
		mu.Unlock()
		if err == nil {
			inst.ShutdownCallbacks()
			inst.Stop()
			t.Fatalf("Started with a node table aliasing one list as the other:\n%s", y)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("Startup error %q does not name the file", err)
		}
	}

	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+node+"records:\n  - name: www.example.org\n")
	s := startServer(t, gslbCorefile(t, nodes, "reload 1s"))
	for _, y := range bad {
		writeFile(t, dir, "nodes.yaml", y)
		logs.line(t, "Rejected reload")
		if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "202.101.172.0/24")); got != "192.0.2.1" {
			t.Fatalf("After a rejected reload: answer %q, want 192.0.2.1 from the old table", got)
		}
		logs.Reset()
	}
}

// TestFaultsLoseNoQueries queries a real CoreDNS while Redis is stopped,
// restarted, paused and resumed, the online API hangs, and the node table
// is reloaded: no query fails, and the node that probes took out gets none.
func TestFaultsLoseNoQueries(t *testing.T) {
	const zj, hzAddr = "202.101.172.0/24", "192.0.2.10"
	logs := captureLog(t)
	rs := testredis.Start(t)
	api := testsupport.NewGeoAPI(t, hubei)
	hz, sh := newProbeTarget(t), newProbeTarget(t)
	hz.mode.Store(targetHang)

	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	err := mmdbgen.WriteCity(city, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN"}, // country level: Redis and the API are asked
		{Network: "202.101.172.0/24", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes := writeFile(t, dir, "nodes.yaml", twoNodes(hz.url(), "1s", sh.url(), "1s"))
	s := startServer(t, corefile(city, "", nodes, fmt.Sprintf(`reload 1s
        redis %s {
            timeout 20ms
        }
        online %s {
            timeout 200ms
            max_qps 200
            breaker 3 1s
        }`, rs.Addr(), api.URL())))
	waitState(t, s, logs, zj, "192.0.2.20", "up")
	srv := func() *server { return s }

	// Each phase asks for /24s no earlier phase asked, so that they miss
	// the LRU and go to Redis and the online API.
	phase := 0
	run := func(name string) {
		t.Helper()
		phase++
		ecs := []string{zj}
		for i := range 200 {
			ecs = append(ecs, fmt.Sprintf("1.%d.%d.0/24", phase, i))
		}
		// A second of queries, and at least 50 however slow the machine.
		res := hammer(t, srv, ecs, time.Second, 3000)
		for start := time.Now(); res.queries < 50 && time.Since(start) < testsupport.WaitTimeout; {
			res.add(hammer(t, srv, ecs, time.Second, 50-res.queries))
		}
		t.Logf("%s: %d queries, %d failed, %d to the down node", name, res.queries, res.failures, res.answers[hzAddr])
		if res.failures != 0 || res.answers[hzAddr] != 0 || res.queries < 50 {
			t.Errorf("%s: %d of %d queries failed, %d went to the down node", name, res.failures, res.queries, res.answers[hzAddr])
		}
	}
	run("normal")
	rs.Stop()
	run("Redis stopped")
	rs.Restart()
	run("Redis restarted")
	rs.Pause()
	run("Redis paused")
	rs.Resume()
	run("Redis resumed")
	api.Mode.Store(testsupport.APISlow)
	run("API hangs")
	writeFile(t, dir, "nodes.yaml", twoNodes(hz.url(), "1s", sh.url(), "1500ms"))
	run("node table reload (1)")
	run("node table reload (2)")
	logs.line(t, "Reloaded node table")
	run("after the reload")
}
