package test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// probedNode is a node probed at url with fall failed probes to go down.
func probedNode(id, addr, prov, isp string, lat, lon float64, url string, fall int) string {
	return fmt.Sprintf(`  - {id: %s, ipv4: [%s], country: CN, province: %s, isp: %s, lat: %.2f, lon: %.2f,
     probe: {url: "%s", load_field: load, interval: 1s, timeout: 900ms, rise: 1, fall: %d, hold_down: 0s}}
`, id, addr, prov, isp, lat, lon, url, fall)
}

// askMany asks name for the first n /24s of 58.0.0.0/12 and returns the
// answers.
func askMany(t *testing.T, s *server, name string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range n {
		out[i] = answerOf(ask(t, s, name, dns.TypeA, fmt.Sprintf("58.%d.%d.0/24", i/256, i%256)))
	}
	return out
}

func count(answers []string) map[string]int {
	m := map[string]int{}
	for _, a := range answers {
		m[a]++
	}
	return m
}

// TestWeightsThroughCoreDNS: three equal nodes weighted 1, 1, 2 take 25%,
// 25% and 50% of 3,000 /24s; raising one weight moves subnets only to it.
func TestWeightsThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	table := func(w1 int) string {
		return fmt.Sprintf(`nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, weight: %d}
  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-3, ipv4: [192.0.2.3], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16, weight: 2}
records:
  - name: www.example.org
`, w1)
	}
	nodes := writeFile(t, dir, "nodes.yaml", table(1))
	s := startServer(t, corefile(city, asn, nodes, "spread_prefix 24\nreload 1s"))
	const n = 3000
	was := askMany(t, s, "www.example.org", n)
	got := count(was)
	for addr, want := range map[string]float64{"192.0.2.1": 0.25, "192.0.2.2": 0.25, "192.0.2.3": 0.5} {
		if f := float64(got[addr]) / n; math.Abs(f-want) > 0.03 {
			t.Errorf("%s got %.1f%% of the subnets, want %.0f%% ± 3%%", addr, 100*f, 100*want)
		}
	}
	writeFile(t, dir, "nodes.yaml", table(2))
	var is []string
	waitFor(t, "hz-1's weight 2 served", func() (bool, string) {
		is = askMany(t, s, "www.example.org", n)
		f := float64(count(is)["192.0.2.1"]) / n
		return math.Abs(f-0.4) < 0.03, fmt.Sprintf("%.3f", f)
	})
	for i := range is {
		if is[i] != was[i] && is[i] != "192.0.2.1" {
			t.Errorf("Subnet %d moved from %s to %s: only to hz-1 may subnets move", i, was[i], is[i])
		}
	}
	t.Logf("Weights 1 1 2: %v; 2 1 2: %v", got, count(is))
}

// TestSpreadUnitsThroughCoreDNS: a place of many networks (200 /16s of
// Zhejiang telecom) is spread per whole network: every reply's scope is
// its network, it costs resolvers no more entries than spread 0, and the
// two nodes still share it evenly; a place of one /12 (Anhui) is cut to
// spread_prefix's /20.
func TestSpreadUnitsThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	nets := make([]string, 200) // every other /16: the gaps keep them apart
	for i := range nets {
		nets[i] = fmt.Sprintf("%d.%d", 58+i/128, 2*(i%128))
		cities = append(cities, mmdbgen.City{Network: nets[i] + ".0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16})
		asns = append(asns, mmdbgen.ASN{Network: nets[i] + ".0.0/16", ASN: 4134, Org: "CHINANET"})
	}
	cities = append(cities, mmdbgen.City{Network: "60.0.0.0/12", Country: "CN", Province: "AH", City: "Hefei", Lat: 31.82, Lon: 117.23})
	asns = append(asns, mmdbgen.ASN{Network: "60.0.0.0/12", ASN: 4134, Org: "CHINANET"})
	city, asn := testsupport.WriteDBs(t, dir, cities, asns)
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
records:
  - name: www.example.org
`)
	type entry struct{ net, answer string }
	entriesOf := func(extra string) (map[entry]bool, map[string]int) {
		s := startServer(t, corefile(city, asn, nodes, extra))
		entries, share := map[entry]bool{}, map[string]int{}
		for i, n := range nets {
			first := ""
			for _, third := range []int{i % 256, (7*i + 100) % 256} {
				ecs := fmt.Sprintf("%s.%d.0/24", n, third)
				r := ask(t, s, "www.example.org", dns.TypeA, ecs)
				e, a := replyECS(r), answerOf(r)
				if e == nil || e.SourceScope != 16 {
					t.Fatalf("%s (%s): scope %v, want its network's /16", ecs, extra, e)
				}
				if first == "" {
					first = a
					share[a]++
				} else if a != first {
					t.Errorf("%s answers %s, %s.%d.0/24 %s: one network, one answer", ecs, a, n, i%256, first)
				}
				entries[entry{n + ".0.0/16", a}] = true
			}
		}
		for i := range 16 {
			ecs := fmt.Sprintf("60.0.%d.0/24", 16+i)
			if e := replyECS(ask(t, s, "www.example.org", dns.TypeA, ecs)); e == nil || e.SourceScope != 20 {
				t.Errorf("%s (%s): scope %v, want spread_prefix's /20 (a place of one /12)", ecs, extra, e)
			}
		}
		return entries, share
	}
	spread, share := entriesOf("")
	none, _ := entriesOf("spread 0")
	if len(spread) != len(nets) || len(none) != len(nets) {
		t.Errorf("resolver entries: %d with the spread, %d with spread 0, want %d (one a network)", len(spread), len(none), len(nets))
	}
	for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
		if f := float64(share[a]) / float64(len(nets)); math.Abs(f-0.5) > 0.1 {
			t.Errorf("%s got %.1f%% of the networks, want 50%% ± 10%%", a, 100*f)
		}
	}
	t.Logf("shares of %d networks: %v", len(nets), share)
}

// TestMergedScopesThroughCoreDNS: adjacent database networks with one
// place answer with their merged scope; a spread answer with the spread's
// unit, spread_prefix's /20 by default, not the /24.
func TestMergedScopesThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "58.0.0.0/12", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
		{Network: "59.0.0.0/17", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
		{Network: "59.0.128.0/17", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	}, []mmdbgen.ASN{
		{Network: "58.0.0.0/12", ASN: 4134, Org: "CHINANET"},
		{Network: "59.0.0.0/16", ASN: 4837, Org: "CHINA UNICOM China169 Backbone"},
	})
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
records:
  - name: www.example.org
  - name: one.example.org
    nodes: [hz-1]
`)
	s := startServer(t, corefile(city, asn, nodes, ""))
	for _, tc := range []struct {
		name, ecs string
		scope     uint8
	}{
		{"one.example.org", "59.0.1.0/24", 16},  // two /17s merged
		{"one.example.org", "58.0.7.0/24", 12},  // the database's own network
		{"www.example.org", "58.0.7.0/24", 20},  // the spread's unit
		{"www.example.org", "58.9.77.0/24", 20}, // the spread's unit
	} {
		if e := replyECS(ask(t, s, tc.name, dns.TypeA, tc.ecs)); e == nil || e.SourceScope != tc.scope {
			t.Errorf("%s for %s: scope %v, want /%d", tc.name, tc.ecs, e, tc.scope)
		}
	}
	// Every /24 of a unit has the unit's answer.
	first := answerOf(ask(t, s, "www.example.org", dns.TypeA, "58.0.16.0/24"))
	for i := 17; i < 32; i++ {
		if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, fmt.Sprintf("58.0.%d.0/24", i))); got != first {
			t.Errorf("58.0.%d.0/24 answers %s, 58.0.16.0/24 %s: one /20 unit, one answer", i, got, first)
		}
	}
}

// TestLadder6ThroughCoreDNS: ladder6 puts the same carrier in a
// neighbouring province before another carrier in the client's province,
// for AAAA only; a bad ladder is a setup error naming the tier.
func TestLadder6ThroughCoreDNS(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz-t, ipv4: [192.0.2.1], ipv6: ["2001:db8::1"], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: sh-u, ipv4: [192.0.2.9], ipv6: ["2001:db8::9"], country: CN, province: SH, isp: unicom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
`)
	s := startServer(t, corefile(city, asn, nodes, "ladder6 province_isp neighbor_isp province neighbor region country continent all"))
	// 59.0.0.0/16 is Zhejiang unicom.
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "59.0.1.0/24")); got != "192.0.2.1" {
		t.Errorf("A for Zhejiang unicom: %s, want hz-t (the default ladder: province first)", got)
	}
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeAAAA, "59.0.2.0/24"))
	checkLabels(t, l, map[string]string{"node": "sh-u", "tier": "neighbor_isp"})
	_, l = queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "59.0.3.0/24"))
	checkLabels(t, l, map[string]string{"node": "hz-t", "tier": "province"})

	// A ladder that leaves tiers out starts, with a warning naming them.
	startServer(t, corefile(city, asn, nodes, "ladder province_isp province all"))
	if l := logs.line(t, "leaves out"); !strings.Contains(l, "[WARNING]") || !strings.Contains(l, "ladder (Corefile:") ||
		!strings.Contains(l, "neighbor_isp, neighbor, region, country, continent") {
		t.Errorf("The warning for a short ladder: %q", l)
	}

	for _, line := range []string{"ladder province_isp town all", "ladder6 all province", "ladder province province all"} {
		err := startFails(t, corefile(city, asn, nodes, line))
		want := map[bool]string{true: `unknown tier "town"`, false: "tier"}[strings.Contains(line, "town")]
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Corefile:") {
			t.Errorf("%q: %v, want a setup error naming the Corefile line and %q", line, err, want)
		}
	}
}

// TestPriorityShedThroughCoreDNS: at load 0.75 between shed_load 0.6 0.9,
// a normal name sheds about half of 4,096 /24s, a low one all, a high one
// a quarter; above the high watermark every name leaves.
func TestPriorityShedThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	hz := newLoadTarget(t, "0.30")
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+zjNode("hz-1", "192.0.2.1", hz.srv.URL)+
		`  - {id: sh-1, ipv4: [192.0.2.9], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
  - name: low.example.org
    priority: low
  - name: high.example.org
    priority: high
`)
	admin := testsupport.FreeAddr(t)
	s := startServer(t, corefile(city, asn, nodes, "shed_load 0.6 0.9\nadmin "+admin))
	hz.load.Store("0.75")
	waitLoad(t, admin, "0.75", "hz-1")
	const n = 4096
	for name, want := range map[string]float64{"www": 0.5, "low": 0, "high": 0.75} {
		kept := float64(count(askMany(t, s, name+".example.org", n))["192.0.2.1"]) / n
		if math.Abs(kept-want) > 0.1 {
			t.Errorf("%s: hz-1 kept %.1f%% of the subnets at load 0.75, want %.0f%% ± 10%%", name, 100*kept, 100*want)
		}
		t.Logf("%s (priority) keeps %.1f%% on hz-1", name, 100*kept)
	}
	hz.load.Store("0.95")
	waitLoad(t, admin, "0.95", "hz-1")
	for _, name := range []string{"www", "low", "high"} {
		if kept := count(askMany(t, s, name+".example.org", 512))["192.0.2.1"]; kept != 0 {
			t.Errorf("%s: hz-1 kept %d subnets above the high watermark, want 0", name, kept)
		}
	}
}

// TestAdaptiveTTLThroughCoreDNS: ttl 60 5 answers MAX while nothing will
// change, MIN after a failed probe and while a node ramps back, and the
// time left (not under MIN) before a pin expires; gslb/ttl_reason says why.
func TestAdaptiveTTLThroughCoreDNS(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	hz := newLoadTarget(t, "0.10")
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+probedNode("hz-1", "192.0.2.1", "ZJ", "telecom", 30.27, 120.16, hz.srv.URL, 10)+
		`  - {id: sh-1, ipv4: [192.0.2.9], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
`)
	soon := time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	soonAt, _ := time.Parse(time.RFC3339, soon)
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	ov := writeFile(t, dir, "overrides.yaml", fmt.Sprintf(`overrides:
  - {cidr: 59.0.1.0/24, nodes: [sh-1], expires: %s}
  - {cidr: 59.0.2.0/24, nodes: [sh-1], expires: %s}
`, soon, later))
	admin := testsupport.FreeAddr(t)
	s := startServer(t, corefile(city, asn, nodes, "ttl 60 5\ncooldown 30s\noverrides "+ov+"\nadmin "+admin))
	api := &adminEnv{addr: admin}
	ttlOf := func(ecs string) (uint32, string, string) {
		r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, ecs))
		if len(r.Answer) == 0 {
			t.Fatalf("No answer for %s", ecs)
		}
		return r.Answer[0].Header().Ttl, l["gslb/ttl_reason"], answerOf(r)
	}
	hzState := func() string {
		_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "58.0.9.0/24"))
		return l["gslb/node"] + " " + l["gslb/node_state"]
	}
	waitFor(t, "hz-1 up", func() (bool, string) { st := hzState(); return st == "hz-1 up", st })
	if ttl, why, a := ttlOf("58.0.1.0/24"); ttl != 60 || why != "stable" || a != "192.0.2.1" {
		t.Errorf("A steady answer: %s ttl %d (%s), want hz-1 with 60 (stable)", a, ttl, why)
	}
	// The time left when asked, however long the start took (not under MIN).
	if ttl, why, a := ttlOf("59.0.1.0/24"); math.Abs(float64(ttl)-max(time.Until(soonAt).Seconds(), 5)) > 2 || why != "expiry" || a != "192.0.2.9" {
		t.Errorf("A pin ending at %s: %s ttl %d (%s), want sh-1 with the %.0fs left (expiry)", soon, a, ttl, why, time.Until(soonAt).Seconds())
	}
	if ttl, why, _ := ttlOf("59.0.2.0/24"); ttl != 60 || why != "stable" {
		t.Errorf("A pin ending in 2h: ttl %d (%s), want 60 (stable)", ttl, why)
	}

	// One failed probe: hz-1 stays up (fall 10), its answers turn MIN.
	fails := counterValue(t, "coredns_gslb_probe_failures_total", "node", "hz-1")
	hz.down.Store(true)
	waitFor(t, "a failed probe of hz-1", func() (bool, string) {
		v := counterValue(t, "coredns_gslb_probe_failures_total", "node", "hz-1")
		return v > fails, fmt.Sprint(v)
	})
	hz.down.Store(false)
	if ttl, why, a := ttlOf("58.0.2.0/24"); ttl != 5 || why != "probe_failed" || a != "192.0.2.1" {
		t.Errorf("After a failed probe: %s ttl %d (%s), want hz-1 with 5 (probe_failed)", a, ttl, why)
	}
	if ttl, why, _ := ttlOf("59.0.2.0/24"); ttl != 60 || why != "stable" {
		t.Errorf("An answer without hz-1 after its failed probe: ttl %d (%s), want 60 (stable)", ttl, why)
	}

	// Down, then up: while it ramps back over the cooldown, MIN.
	hz.down.Store(true)
	waitFor(t, "hz-1 down", func() (bool, string) { st := api.nodes(t)["hz-1"].State; return st == "down", st })
	hz.down.Store(false)
	waitFor(t, "hz-1 up again", func() (bool, string) { st := api.nodes(t)["hz-1"].State; return st == "up", st })
	if ttl, why, _ := ttlOf("58.0.3.0/24"); ttl != 5 || why != "ramping" {
		t.Errorf("While hz-1 ramps back: ttl %d (%s), want 5 (ramping)", ttl, why)
	}
}

// TestStabilityThroughCoreDNS: with a stability weight, the steady one of
// two equal nodes takes every subnet once the other failed probes; without
// it they keep sharing.
func TestStabilityThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	a, b := newLoadTarget(t, "0.10"), newLoadTarget(t, "0.10")
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+
		probedNode("hz-1", "192.0.2.1", "ZJ", "telecom", 30.27, 120.16, a.srv.URL, 50)+
		probedNode("hz-2", "192.0.2.2", "ZJ", "telecom", 30.27, 120.16, b.srv.URL, 50)+"records:\n  - name: www.example.org\n")
	steady := startServer(t, corefile(city, asn, nodes, "weights 0.5 0.1 0.1 0 0.3"))
	plain := startServer(t, corefile(city, asn, nodes, ""))
	const n = 2048
	for _, s := range []*server{steady, plain} {
		waitFor(t, "both nodes sharing", func() (bool, string) {
			c := count(askMany(t, s, "www.example.org", n))
			return c["192.0.2.1"] > n/4 && c["192.0.2.2"] > n/4, fmt.Sprint(c)
		})
	}
	fails := counterValue(t, "coredns_gslb_probe_failures_total", "node", "hz-2")
	b.down.Store(true)
	waitFor(t, "three failed probes of hz-2", func() (bool, string) {
		v := counterValue(t, "coredns_gslb_probe_failures_total", "node", "hz-2")
		return v >= fails+3, fmt.Sprint(v)
	})
	b.down.Store(false)
	waitFor(t, "the steady node taking every subnet", func() (bool, string) {
		c := count(askMany(t, steady, "www.example.org", n))
		return c["192.0.2.1"] == n, fmt.Sprint(c)
	})
	if c := count(askMany(t, plain, "www.example.org", n)); c["192.0.2.2"] < n/4 {
		t.Errorf("Without a stability weight: %v, want hz-2 to keep its share", c)
	}
}

// TestReplayResolverEntries: replay's resolver_entries_per_subnet and
// scopes are what a resolver caching a real CoreDNS's replies to the same
// queries holds: the distinct (scope network, answer) pairs per /24.
func TestReplayResolverEntries(t *testing.T) {
	dir, conf, text := toolSetup(t, toolNodes, "")
	s := startServer(t, text)
	var v4 []string
	seen := map[string]bool{}
	for _, c := range toolClients(600) {
		if strings.Contains(c, ".") && !seen[c] {
			seen[c] = true
			v4 = append(v4, c)
		}
	}
	entries, scopes := map[string]bool{}, map[string]int{}
	for _, c := range v4 {
		r := ask(t, s, "www.example.org", dns.TypeA, c)
		e := replyECS(r)
		if e == nil {
			t.Fatalf("%s: no ECS in the reply", c)
		}
		p := netip.MustParsePrefix(c)
		net, _ := p.Addr().Prefix(int(e.SourceScope))
		entries[net.String()+" "+answerOf(r)] = true
		scopes[fmt.Sprintf("/%d", e.SourceScope)]++
	}
	in := writeFile(t, dir, "clients.txt", strings.Join(v4, "\n")+"\n")
	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", in)
	var got struct {
		Entries float64        `json:"resolver_entries_per_subnet"`
		Scopes  map[string]int `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	want := float64(len(entries)) / float64(len(v4))
	if math.Abs(got.Entries-want) > 1e-9 || fmt.Sprint(got.Scopes) != fmt.Sprint(scopes) {
		t.Errorf("replay: %v entries per /24, scopes %v; CoreDNS's replies make %v, scopes %v", got.Entries, got.Scopes, want, scopes)
	}
	if want >= 1 || len(scopes) < 2 {
		t.Errorf("%v entries per /24 over scopes %v: the clients should share some scopes", want, scopes)
	}
	t.Logf("%d /24s: %.3f resolver entries per /24, scopes %v", len(v4), want, scopes)
}

// TestExplainFollowsLadder: explain's tiers are the ladder in use, down to
// the rung that answered.
func TestExplainFollowsLadder(t *testing.T) {
	_, conf, _ := toolSetup(t, toolNodes, "ladder province_isp neighbor_isp province neighbor region country continent all")
	out, stderr, code := runTool(t, "explain", "-conf", conf, "-json", "1.4.1.0/24")
	var x struct {
		Tiers []struct{ Tier string }
		Tier  string
	}
	if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil {
		t.Fatalf("explain: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	var tiers []string
	for _, et := range x.Tiers {
		tiers = append(tiers, et.Tier)
	}
	if got := strings.Join(tiers, " "); got != "province_isp neighbor_isp" || x.Tier != "neighbor_isp" {
		t.Errorf("Tiers %q answered by %s, want province_isp neighbor_isp answered by neighbor_isp", got, x.Tier)
	}
}

// TestSpreadKeepsDistanceThroughCoreDNS: for 2,048 Xinjiang telecom /24s
// (a province without a node, nor one in its region), the default spread sends no client more
// than max(100 km, 10%) farther than spread 0 does.
func TestSpreadKeepsDistanceThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	var cities []mmdbgen.City
	for i := range 16 { // 61.i.0.0/16 across Xinjiang
		cities = append(cities, mmdbgen.City{Network: fmt.Sprintf("61.%d.0.0/16", i), Country: "CN", Province: "XJ",
			City: fmt.Sprintf("xj-%d", i), Lat: 36 + float64(i%4)*2, Lon: 76 + float64(i/4)*4})
	}
	city, asn := testsupport.WriteDBs(t, dir, cities, []mmdbgen.ASN{{Network: "61.0.0.0/12", ASN: 4134, Org: "CHINANET"}})
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: cd, ipv4: [192.0.2.1], country: CN, province: SC, isp: telecom, lat: 30.57, lon: 104.07}
  - {id: gz, ipv4: [192.0.2.2], country: CN, province: GD, isp: telecom, lat: 23.13, lon: 113.26}
  - {id: bj, ipv4: [192.0.2.3], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.40}
records:
  - name: www.example.org
`)
	coords := map[string][2]float64{"192.0.2.1": {30.57, 104.07}, "192.0.2.2": {23.13, 113.26}, "192.0.2.3": {39.90, 116.40}, "192.0.2.4": {34.34, 108.94}}
	def := startServer(t, corefile(city, asn, nodes, ""))
	none := startServer(t, corefile(city, asn, nodes, "spread 0"))
	const n = 2048
	var sumDef, sumNone float64
	for i := range n {
		net := i % 16
		ecs := fmt.Sprintf("61.%d.%d.0/24", net, i/16)
		lat, lon := 36+float64(net%4)*2, 76+float64(net/4)*4
		a, b := answerOf(ask(t, def, "www.example.org", dns.TypeA, ecs)), answerOf(ask(t, none, "www.example.org", dns.TypeA, ecs))
		da := scoring.Haversine(lat, lon, coords[a][0], coords[a][1])
		db := scoring.Haversine(lat, lon, coords[b][0], coords[b][1])
		sumDef, sumNone = sumDef+da, sumNone+db
		if da > db+max(100, 0.1*db)+1 {
			t.Errorf("%s: the default spread sends it %.0f km (%s), spread 0 %.0f km (%s)", ecs, da, a, db, b)
		}
	}
	t.Logf("Mean distance over %d /24s: %.0f km with the defaults, %.0f km with spread 0", n, sumDef/n, sumNone/n)
}
