package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/resolvers"

	"github.com/miekg/dns"
)

// gainProvinces: ten provinces, the first six with a node; 1.P.0.0/16 is
// province P's telecom network.
var gainProvinces = []struct {
	code     string
	lat, lon float64
}{
	{"ZJ", 30.27, 120.16}, {"SH", 31.23, 121.47}, {"BJ", 39.90, 116.41}, {"GD", 23.13, 113.26}, {"SC", 30.66, 104.07},
	{"HB", 30.59, 114.31}, {"JX", 28.68, 115.86}, {"AH", 31.82, 117.23}, {"HA", 34.76, 113.65}, {"FJ", 26.07, 119.30},
}

const gainNodesWithNode = 6

// The gain: a replay where 40% of the queries come from resolvers that
// send no ECS, each in a hub (Shanghai, Beijing, Guangdong) and serving
// users mostly (85%) of one province, the rest spread over the others.
// Decided for the resolvers' addresses (today) their users mostly cross
// provinces; decided for their populations, learned from beacons, the
// cross-province ratio of that share falls to at most twice that of the
// ECS share (whose users in the four provinces without a node cross too).
// gainControls loads the gain's ten provinces: without a resolver map
// (today), and with one whose beacons the test reports.
func gainControls(t *testing.T) (today, withMap *control.Control) {
	dir := t.TempDir()
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	var nodes strings.Builder
	nodes.WriteString("nodes:\n")
	for i, p := range gainProvinces {
		n := fmt.Sprintf("1.%d.0.0/16", i)
		cities = append(cities, mmdbgen.City{Network: n, Country: "CN", Province: p.code, Lat: p.lat, Lon: p.lon, Radius: 50})
		asns = append(asns, mmdbgen.ASN{Network: n, ASN: 4134, Org: "Chinanet"})
		if i < gainNodesWithNode {
			fmt.Fprintf(&nodes, "  - {id: %s, ipv4: [192.0.2.%d], country: CN, province: %s, isp: telecom, lat: %v, lon: %v}\n",
				strings.ToLower(p.code), i+1, p.code, p.lat, p.lon)
		}
	}
	// 9.0.0.0/24: Zhejiang unicom.
	cities = append(cities, mmdbgen.City{Network: "9.0.0.0/24", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50})
	asns = append(asns, mmdbgen.ASN{Network: "9.0.0.0/24", ASN: 4837, Org: "China Unicom"})
	nodes.WriteString("records:\n  - name: www.example.org\n  - name: b.example.org\n    nodes: [sh]\n")
	testsupport.WriteDBs(t, dir, cities, asns)
	writeFile(t, dir, "nodes.yaml", nodes.String())
	for name, secret := range map[string]string{"beacon.key": "beacon-key-0123456789abcdef", "admin.token": "s3cret-token-for-tests",
		"edge.token": "edge-token-5f1c9a7e3b2d4068aa"} {
		secretFile(t, dir, name, secret)
	}
	ctl := func(extra string) *control.Control {
		d := caddyfile.NewDispenser("Testfile", strings.NewReader("gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n"+extra+"}"))
		o, err := config.Parse(&d, nil, dir, config.Unique{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := control.New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Stop() })
		return c
	}
	today = ctl("")
	withMap = ctl("admin 127.0.0.1:0 {\ntoken_file admin.token\n}\nfeed {\nsource edge {\ntoken_file edge.token\nnodes *\n}\n}\n" +
		"resolvers {\nbeacon b.example.org\nkey_file beacon.key\nmin_samples 20\n}\n")
	return today, withMap
}

func TestResolverPopulationGain(t *testing.T) {
	today, withMap := gainControls(t)
	rng := rand.New(rand.NewPCG(32, 40))
	user := func(p int) netip.Addr {
		return netip.AddrFrom4([4]byte{1, byte(p), byte(rng.IntN(256)), byte(1 + rng.IntN(250))})
	}
	// 30 resolvers: each in a hub, its users 85% in its home province.
	type res struct {
		addr netip.Addr
		home int
	}
	var rs []res
	for i := range 30 {
		hub := []int{1, 2, 3}[i%3]
		rs = append(rs, res{netip.AddrFrom4([4]byte{1, byte(hub), 200, byte(10 + i)}), i % len(gainProvinces)})
	}
	userOf := func(r res) (netip.Addr, int) {
		p := r.home
		if rng.Float64() >= 0.85 {
			p = rng.IntN(len(gainProvinces))
		}
		return user(p), p
	}
	// The beacons: 40 per resolver, fetched by its users.
	m := withMap.Resolvers()
	ctx := context.Background()
	for _, r := range rs {
		var reps []resolvers.Report
		for range 40 {
			lb := m.Labeler().Fresh(time.Now())
			m.BeaconQuery(r.addr, lb)
			u, _ := userOf(r)
			reps = append(reps, resolvers.Report{Label: lb, Client: u.String()})
		}
		if got := m.Report(ctx, "edge", reps); got[resolvers.Joined] != 40 {
			t.Fatalf("Reports for %s: %v", r.addr, got)
		}
	}
	m.Cycle(ctx)

	type ratio struct{ cross, n int }
	var ecs, nonECS, baseline ratio
	decideFor := func(c *control.Control, remote netip.Addr, ecsAddr netip.Addr) string {
		v := c.View()
		q := &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA,
			Remote: &net.UDPAddr{IP: remote.AsSlice(), Port: 53}}
		if ecsAddr.IsValid() {
			q.ECS = &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: ecsAddr.AsSlice()}
		}
		var out decide.Outcome
		c.Decider().Decide(ctx, q, &out)
		if out.Decision.Winner == nil {
			t.Fatalf("No answer for %s", remote)
		}
		return out.Decision.Winner.Province
	}
	count := func(r *ratio, node string, p int) {
		r.n++
		if node != gainProvinces[p].code {
			r.cross++
		}
	}
	for i := range 10000 {
		if i%10 < 6 { // 60%: a resolver that sends the user's ECS
			p := rng.IntN(len(gainProvinces))
			u := user(p)
			count(&ecs, decideFor(withMap, netip.MustParseAddr("1.1.250.1"), u), p)
			continue
		}
		r := rs[rng.IntN(len(rs))]
		_, p := userOf(r)
		count(&nonECS, decideFor(withMap, r.addr, netip.Addr{}), p)
		count(&baseline, decideFor(today, r.addr, netip.Addr{}), p)
	}
	f := func(r ratio) float64 { return float64(r.cross) / float64(r.n) }
	t.Logf("Cross-province ratio: ECS share %.3f (%d queries); non-ECS share decided for the resolvers (today) %.3f, for their populations %.3f (%d queries)",
		f(ecs), ecs.n, f(baseline), f(nonECS), nonECS.n)
	if f(nonECS) > 2*f(ecs) {
		t.Errorf("The non-ECS share's cross-province ratio %.3f is above twice the ECS share's %.3f", f(nonECS), f(ecs))
	}
	if f(baseline) <= f(nonECS) {
		t.Errorf("Populations did not lower the non-ECS ratio: %.3f today, %.3f with them", f(baseline), f(nonECS))
	}
}

// TestPopulationNodeOfMost: a population 40% of Jiangxi, 35% of Zhejiang
// telecom and 25% of Zhejiang unicom is decided at a Zhejiang place, whose
// node wins for 60% of its clients, not for Jiangxi, its largest place.
func TestPopulationNodeOfMost(t *testing.T) {
	_, c := gainControls(t)
	ctx := context.Background()
	m := c.Resolvers()
	res := netip.MustParseAddr("1.1.200.9")
	nodeFor := func(remote netip.Addr, ecs netip.Addr) (string, *decide.Outcome) {
		v := c.View()
		q := &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: &net.UDPAddr{IP: remote.AsSlice(), Port: 53}}
		if ecs.IsValid() {
			q.ECS = &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: ecs.AsSlice()}
		}
		var out decide.Outcome
		c.Decider().Decide(ctx, q, &out)
		return out.Decision.Winner.ID, &out
	}
	jx, _ := nodeFor(netip.MustParseAddr("1.1.250.1"), netip.MustParseAddr("1.6.0.1"))
	if jx == "zj" {
		t.Fatalf("Jiangxi's clients get zj: the test needs another node for them")
	}
	var reps []resolvers.Report
	for i := range 100 {
		client := "1.6.0.0/24" // Jiangxi
		switch {
		case i >= 75:
			client = "9.0.0.0/24" // Zhejiang unicom
		case i >= 40:
			client = "1.0.0.0/24" // Zhejiang telecom
		}
		lb := m.Labeler().Fresh(time.Now())
		m.BeaconQuery(res, lb)
		reps = append(reps, resolvers.Report{Label: lb, Client: client})
	}
	if got := m.Report(ctx, "edge", reps); got[resolvers.Joined] != 100 {
		t.Fatalf("Reports: %v", got)
	}
	m.Cycle(ctx)
	node, out := nodeFor(res, netip.Addr{})
	if node != "zj" || out.Population == nil || out.PopulationShare < 0.599 || out.Loc.Province != "ZJ" {
		t.Errorf("Decided %s at %s for a share %.2f, want zj at a Zhejiang place for 0.60 (Jiangxi's node is %s)", node, out.Loc.Province, out.PopulationShare, jx)
	}
	x, err := c.Decider().Explain(ctx, decide.Client{Addr: res, Bits: -1}, "", dns.TypeA, nil)
	if err != nil || x.Population == nil || len(x.Population.Places) != 3 || x.Population.Places[0].Place != "JX telecom" || x.Population.Share != 0.6 {
		t.Errorf("Explain: %+v %v", x.Population, err)
	}
}
