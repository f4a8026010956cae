package gslb

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

const fixtureBlock = "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n%s}"

// newFixtureGSLB is the fixture's gslb with extra options. Its test
// writer is one client, which the response rate limit would limit: unless
// extra sets rrl, it is off.
func newFixtureGSLB(t testing.TB, nodes, extra string) *GSLB {
	t.Helper()
	if !strings.Contains(extra, "rrl") {
		extra += "rrl off\n"
	}
	dir := fixture(t, nodes)
	g := newTestGSLB(t, dir, fmt.Sprintf(fixtureBlock, extra))
	g.Next = test.NextHandler(dns.RcodeRefused, nil)
	return g
}

// query builds a query, with an ECS option when family != 0xffff.
func query(name string, qtype uint16, ecs *dns.EDNS0_SUBNET) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if ecs != nil {
		m.SetEdns0(1232, false)
		ecs.Code = dns.EDNS0SUBNET
		o := m.IsEdns0()
		o.Option = append(o.Option, ecs)
	}
	return m
}

func subnet(s string) *dns.EDNS0_SUBNET {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	ones, _ := n.Mask.Size()
	e := &dns.EDNS0_SUBNET{SourceNetmask: uint8(ones), Address: n.IP}
	if n.IP.To4() != nil {
		e.Family = 1
	} else {
		e.Family = 2
	}
	return e
}

func serve(t testing.TB, g *GSLB, m *dns.Msg) (int, *dns.Msg) {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	rcode, err := g.ServeDNS(context.Background(), rec, m)
	if err != nil {
		t.Fatalf("ServeDNS: %v", err)
	}
	return rcode, rec.Msg
}

func replyECS(m *dns.Msg) *dns.EDNS0_SUBNET {
	if m == nil {
		return nil
	}
	if o := m.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_SUBNET); ok {
				return e
			}
		}
	}
	return nil
}

func TestServeDNSAnswers(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "ecs_min_prefix 8 32\n")
	tests := []struct {
		name      string
		qname     string
		qtype     uint16
		ecs       string
		want      []string // acceptable answers (one of them)
		ttl       uint32
		scope     uint8
		wantScope bool
	}{
		{"same province and carrier, tie", "www.example.org", dns.TypeA, "1.0.1.0/24", []string{"192.0.2.1", "192.0.2.2"}, 60, 24, true},
		{"record restricted to one node", "sh.example.org", dns.TypeA, "1.0.1.0/24", []string{"192.0.2.3"}, 30, 24, true},
		{"province only from a /24 city", "www.example.org", dns.TypeA, "2.0.0.0/24", []string{"192.0.2.3"}, 60, 24, true},
		{"country-only location scored without distance", "sh.example.org", dns.TypeA, "3.0.0.0/8", []string{"192.0.2.3"}, 30, 8, true},
		{"private ECS address is location-free", "sh.example.org", dns.TypeA, "10.1.2.0/24", []string{"192.0.2.3"}, 30, 8, true},
		{"AAAA from the only IPv6 node", "www.example.org", dns.TypeAAAA, "1.0.1.0/24", []string{"2001:db8::4"}, 60, 24, true},
		{"IPv6 client", "v6.example.org", dns.TypeAAAA, "2400::/48", []string{"2001:db8::4"}, 60, 32, true},
		{"no ECS: resolver address", "sh.example.org", dns.TypeA, "", []string{"192.0.2.3"}, 30, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e *dns.EDNS0_SUBNET
			if tc.ecs != "" {
				e = subnet(tc.ecs)
			}
			rcode, m := serve(t, g, query(tc.qname, tc.qtype, e))
			if rcode != dns.RcodeSuccess || m.Rcode != dns.RcodeSuccess {
				t.Fatalf("Expected NOERROR, got %d/%v", rcode, m)
			}
			if !m.Authoritative {
				t.Errorf("Expected an authoritative answer")
			}
			if len(m.Answer) != 1 {
				t.Fatalf("Expected 1 answer, got %v", m.Answer)
			}
			var got string
			switch rr := m.Answer[0].(type) {
			case *dns.A:
				got = rr.A.String()
			case *dns.AAAA:
				got = rr.AAAA.String()
			}
			ok := false
			for _, w := range tc.want {
				ok = ok || got == w
			}
			if !ok {
				t.Errorf("Expected one of %v, got %s", tc.want, got)
			}
			if m.Answer[0].Header().Ttl != tc.ttl {
				t.Errorf("Expected TTL %d, got %d", tc.ttl, m.Answer[0].Header().Ttl)
			}
			re := replyECS(m)
			if !tc.wantScope {
				if re != nil {
					t.Errorf("Expected no ECS in the reply, got %v", re)
				}
				return
			}
			if re == nil {
				t.Fatalf("Expected ECS in the reply")
			}
			if re.SourceScope != tc.scope || re.SourceNetmask != e.SourceNetmask || re.Family != e.Family || !re.Address.Equal(e.Address) {
				t.Errorf("Expected ECS %s with scope %d, got %v", tc.ecs, tc.scope, re)
			}
		})
	}
}

// Equal nodes share clients: the tie is broken per unit (here, with
// spread_prefix 24, per /24), stably.
func TestServeDNSTieSpreadsPerSubnet(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "spread_prefix 24\n")
	seen := map[string]int{}
	for i := 0; i < 64; i++ {
		e := subnet("1.0." + strconv.Itoa(i) + ".0/24")
		_, m := serve(t, g, query("www.example.org", dns.TypeA, e))
		a := m.Answer[0].(*dns.A).A.String()
		seen[a]++
		if re := replyECS(m); re.SourceScope < 24 {
			t.Errorf("Expected a scope of at least /24 for a tie, got %d", re.SourceScope)
		}
		_, again := serve(t, g, query("www.example.org", dns.TypeA, subnet("1.0."+strconv.Itoa(i)+".0/24")))
		if b := again.Answer[0].(*dns.A).A.String(); b != a {
			t.Errorf("Expected the same node for the same subnet, got %s then %s", a, b)
		}
	}
	if seen["192.0.2.1"] == 0 || seen["192.0.2.2"] == 0 || len(seen) != 2 {
		t.Errorf("Expected the two equal Zhejiang nodes to share the subnets, got %v", seen)
	}
}

func TestServeDNSScopeBounds(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "ecs_min_prefix 8 32\n")
	tests := []struct {
		ecs       string
		qname     string
		wantScope uint8
	}{
		// The /24 ASN network is longer than the /20 source: clamp to the source.
		{"1.0.0.0/20", "sh.example.org", 20},
		// Source prefix 0: the resolver's own address decides, scope 0.
		{"0.0.0.0/0", "sh.example.org", 0},
		// Too coarse for ecs_min_prefix 8/32 in IPv6: scope 0.
		{"2400::/24", "v6.example.org", 0},
		// Longer than needed: a /32 source gets the /24 database network.
		{"2.0.0.7/32", "sh.example.org", 24},
	}
	for _, tc := range tests {
		e := subnet(tc.ecs)
		_, m := serve(t, g, query(tc.qname, dns.TypeA, e))
		re := replyECS(m)
		if re == nil || re.SourceScope != tc.wantScope {
			t.Errorf("ECS %s: expected scope %d, got %v", tc.ecs, tc.wantScope, re)
		}
	}
}

func TestServeDNSMalformedECS(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "")
	tests := []struct {
		name string
		ecs  *dns.EDNS0_SUBNET
	}{
		{"unknown family", &dns.EDNS0_SUBNET{Family: 3, SourceNetmask: 24, Address: net.ParseIP("1.0.1.0")}},
		{"IPv4 prefix too long", &dns.EDNS0_SUBNET{Family: 1, SourceNetmask: 33, Address: net.ParseIP("1.0.1.0")}},
		{"IPv6 prefix too long", &dns.EDNS0_SUBNET{Family: 2, SourceNetmask: 129, Address: net.ParseIP("2400::")}},
		{"bits after the prefix", &dns.EDNS0_SUBNET{Family: 1, SourceNetmask: 24, Address: net.ParseIP("1.0.1.7")}},
		{"bits after an IPv6 prefix", &dns.EDNS0_SUBNET{Family: 2, SourceNetmask: 32, Address: net.ParseIP("2400::1")}},
		{"address of the other family", &dns.EDNS0_SUBNET{Family: 1, SourceNetmask: 24, Address: net.ParseIP("2400::")}},
		{"family 0 with a prefix", &dns.EDNS0_SUBNET{Family: 0, SourceNetmask: 8, Address: net.ParseIP("0.0.0.0")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"www.example.org", "nope.example.org"} {
				rcode, _ := serve(t, g, query(name, dns.TypeA, tc.ecs))
				if rcode != dns.RcodeFormatError {
					t.Errorf("Expected FORMERR for %s, got %s", name, dns.RcodeToString[rcode])
				}
			}
		})
	}
	// dig's "+subnet=0" sends family 0 with a zero prefix: valid.
	rcode, m := serve(t, g, query("www.example.org", dns.TypeA, &dns.EDNS0_SUBNET{Family: 0, Address: net.IPv4zero}))
	if rcode != dns.RcodeSuccess || len(m.Answer) != 1 || replyECS(m).SourceScope != 0 {
		t.Errorf("Expected an answer with scope 0 for family 0, got %d %v", rcode, m)
	}
}

func TestServeDNSNegative(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "")
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer int
		soa    bool
	}{
		{"NODATA for another type", "www.example.org", dns.TypeTXT, dns.RcodeSuccess, 0, true},
		{"NODATA for AAAA without IPv6 node", "sh.example.org", dns.TypeAAAA, dns.RcodeSuccess, 0, true},
		{"NXDOMAIN", "nope.example.org", dns.TypeA, dns.RcodeNameError, 0, true},
		{"apex SOA", "example.org", dns.TypeSOA, dns.RcodeSuccess, 1, false},
		{"apex NODATA", "example.org", dns.TypeA, dns.RcodeSuccess, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, m := serve(t, g, query(tc.qname, tc.qtype, nil))
			if m.Rcode != tc.rcode || len(m.Answer) != tc.answer || !m.Authoritative {
				t.Fatalf("Expected rcode %d with %d answers, got %v", tc.rcode, tc.answer, m)
			}
			if tc.soa {
				if len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA || m.Ns[0].Header().Name != "example.org." {
					t.Fatalf("Expected the zone's SOA in the authority section, got %v", m.Ns)
				}
			}
		})
	}
	// Outside the zones: the next plugin.
	rcode, _ := serve(t, g, query("www.example.net", dns.TypeA, nil))
	if rcode != dns.RcodeRefused {
		t.Errorf("Expected the next plugin's REFUSED for another zone, got %d", rcode)
	}
}

func TestServeDNSFallthrough(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "fallthrough\n")
	if rcode, _ := serve(t, g, query("nope.example.org", dns.TypeA, nil)); rcode != dns.RcodeRefused {
		t.Errorf("Expected fallthrough to the next plugin, got %d", rcode)
	}
	if _, m := serve(t, g, query("www.example.org", dns.TypeA, nil)); len(m.Answer) != 1 {
		t.Errorf("Expected records to be answered with fallthrough on, got %v", m)
	}
}

func TestServeDNSAllOverloaded(t *testing.T) {
	const nodes = `
nodes:
  - {id: a, ipv4: [192.0.2.1], country: CN, province: ZJ, lat: 30, lon: 120, load: 0.95}
  - {id: b, ipv4: [192.0.2.2], country: CN, province: ZJ, lat: 30, lon: 120, load: 0.85}
records:
  - name: www.example.org
`
	open := newFixtureGSLB(t, nodes, "")
	_, m := serve(t, open, query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")))
	if len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.2" {
		t.Errorf("Expected fail-open to the least-loaded node, got %v", m)
	}
	closed := newFixtureGSLB(t, nodes, "all_down servfail\n")
	if rcode, _ := serve(t, closed, query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))); rcode != dns.RcodeServerFailure {
		t.Errorf("Expected SERVFAIL with all_down servfail, got %d", rcode)
	}
	// max_load raised above both loads: the nearest usable node by score.
	raised := newFixtureGSLB(t, nodes, "max_load 1\nspread 0\n") // best wins: no spread
	_, m = serve(t, raised, query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")))
	if len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "192.0.2.2" {
		t.Errorf("Expected the less loaded node by score, got %v", m)
	}
}

func TestZoneOf(t *testing.T) {
	zones := []string{"example.org.", "sub.example.org.", "b\\.example.org.", "."}
	for _, name := range []string{
		"example.org.", "www.example.org.", "sub.example.org.", "a.sub.example.org.",
		"xexample.org.", "a\\.example.org.", "a\\\\.example.org.", "b\\.example.org.",
		"x.b\\.example.org.", "org.", ".", "example.com.", "wwwsub.example.org.",
	} {
		for _, zs := range [][]string{zones, zones[:3], zones[:1]} {
			if got, want := zoneOf(zs, name), plugin.Zones(zs).Matches(name); got != want {
				t.Errorf("zoneOf(%q, %q) = %q, plugin.Zones.Matches says %q", zs, name, got, want)
			}
		}
	}
}
