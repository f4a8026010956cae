package decide_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// decideNodes is the fixture's node table with an HTTPS record, a cname
// node and a record with a fallback.
const decideNodes = testsupport.FixtureNodes + `  - name: svc.example.org
    nodes: [hz-a, bj]
    https: {alpn: [h2], port: 443}
  - name: alias.example.org
    nodes: [edge]
    https: {alpn: [h2]}
  - name: fb.example.org
    nodes: [sh]
    fallback: backup.example.net
  - name: v6only.example.org
    nodes: [bj6]
`

// newControl loads the fixture's databases and nodes (decideNodes with
// edge, a cname node, and bj6, an IPv6-only one, added) under a gslb block with extra options, the
// way the server's setup does.
func newControl(t *testing.T, extra string) (*control.Control, string) {
	t.Helper()
	nodes := strings.Replace(decideNodes, "records:\n",
		"  - {id: edge, cname: edge.cdn.example.net, country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n"+
			"  - {id: bj6, ipv6: [\"2001:db8::6\"], country: CN, province: BJ, isp: unicom, lat: 39.9, lon: 116.4}\nrecords:\n", 1)
	// www keeps the fixture's four nodes.
	nodes = strings.Replace(nodes, "  - name: www.example.org\n", "  - name: www.example.org\n    nodes: [hz-a, hz-b, sh, bj]\n", 1)
	dir := testsupport.Fixture(t, nodes)
	corefile := "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n" + extra + "}"
	d := caddyfile.NewDispenser("Testfile", strings.NewReader(corefile))
	o, err := config.Parse(&d, nil, dir, config.Unique{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	c, err := control.New(o)
	if err != nil {
		t.Fatalf("control.New: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	return c, dir
}

func udp(s string) *net.UDPAddr { return &net.UDPAddr{IP: net.ParseIP(s), Port: 53} }

func ecs(prefix string) *dns.EDNS0_SUBNET {
	p := netip.MustParsePrefix(prefix)
	fam := uint16(1)
	if p.Addr().Is6() {
		fam = 2
	}
	return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: fam, SourceNetmask: uint8(p.Bits()), Address: p.Addr().AsSlice()}
}

// decideQ decides name's qtype for a resolver and an ECS option.
func decideQ(t *testing.T, c *control.Control, name string, qtype uint16, remote net.Addr, opt *dns.EDNS0_SUBNET) *decide.Outcome {
	t.Helper()
	v := c.View()
	rec, err := decide.Record(v, name)
	if err != nil {
		t.Fatal(err)
	}
	out := new(decide.Outcome)
	c.Decider().Decide(context.Background(), &decide.Query{View: v, Record: rec, QType: qtype, Remote: remote, ECS: opt}, out)
	return out
}

func winner(o *decide.Outcome) string {
	if o.Decision.Winner == nil {
		return ""
	}
	return o.Decision.Winner.ID
}

// TestDecideResolver: without ECS the resolver's address is the client;
// a Zhejiang resolver gets one of the two tied Zhejiang nodes, its /24
// picks which, and the reply's key scope covers that /24.
func TestDecideResolver(t *testing.T) {
	c, _ := newControl(t, "")
	out := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), nil)
	if out.FromECS || out.Client != netip.MustParseAddr("1.0.1.7") || out.Scope != 0 {
		t.Errorf("Expected the resolver as client without ECS scope, got %v fromECS=%v scope=%d", out.Client, out.FromECS, out.Scope)
	}
	if w := winner(out); (w != "hz-a" && w != "hz-b") || out.Loc.Province != "ZJ" || !out.Located || !out.Same {
		t.Fatalf("Expected a Zhejiang node for a Zhejiang client, got %q (province %q located %v same %v)", w, out.Loc.Province, out.Located, out.Same)
	}
	if !out.Decision.PerSubnet || out.KeyScope < out.UnitBits || out.KeyScope > 24 {
		t.Errorf("Expected a tie picked per subnet with a key scope between the unit (/%d) and /24, got per-subnet %v scope /%d",
			out.UnitBits, out.Decision.PerSubnet, out.KeyScope)
	}
	if out.Policy() != canary.PolicyStable || out.InCanary || out.Canary != nil {
		t.Errorf("Expected the stable policy without a canary, got %s", out.Policy())
	}
	// The same unit always gets the same node; the answer starts with it.
	again := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.200"), nil)
	if out.Unit == again.Unit && winner(again) != winner(out) {
		t.Errorf("Expected one node for one unit, got %s and %s", winner(out), winner(again))
	}
	var first string
	for n := range out.Addresses() {
		first = n.ID
		break
	}
	if first != winner(out) {
		t.Errorf("Expected the winner first in the answer, got %s before %s", first, winner(out))
	}
	if out.TTL == 0 || out.TTLReason == "" {
		t.Errorf("Expected a ttl with its reason, got %d %q", out.TTL, out.TTLReason)
	}
}

// TestDecideECS: a specific enough ECS option speaks for the client and
// bounds the reply's scope; a short one, or one from a resolver outside
// trust_ecs, leaves the resolver's address in charge.
func TestDecideECS(t *testing.T) {
	c, _ := newControl(t, "ecs_min_prefix 20 48\ntrust_ecs 1.0.1.0/24\n")
	out := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), ecs("2.0.0.0/24"))
	if !out.FromECS || out.Client != netip.MustParseAddr("2.0.0.0") || winner(out) != "sh" || !out.Same {
		t.Fatalf("Expected the Shanghai ECS client sent to sh, got %v fromECS=%v winner %q", out.Client, out.FromECS, winner(out))
	}
	if out.Scope == 0 || out.Scope > 24 {
		t.Errorf("Expected a scope within the /24 source, got /%d", out.Scope)
	}
	// The scope never exceeds the source prefix, however precise the data.
	narrow := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), ecs("2.0.0.0/22"))
	if !narrow.FromECS || narrow.Scope > 22 {
		t.Errorf("Expected a /22 source honoured with scope <= 22, got fromECS=%v scope /%d", narrow.FromECS, narrow.Scope)
	}
	short := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), ecs("2.0.0.0/16"))
	if short.FromECS || short.Client != netip.MustParseAddr("1.0.1.7") || short.Loc.Province != "ZJ" || short.Scope != 0 {
		t.Errorf("Expected a /16 (under ecs_min_prefix 20) ignored, got %v fromECS=%v scope %d", short.Client, short.FromECS, short.Scope)
	}
	zero := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), ecs("0.0.0.0/0"))
	if zero.FromECS {
		t.Errorf("Expected a source prefix of 0 to leave the resolver in charge")
	}
	untrusted := decideQ(t, c, "www.example.org", dns.TypeA, udp("2.0.0.9"), ecs("1.0.1.0/24"))
	if untrusted.FromECS || untrusted.Loc.Province != "SH" {
		t.Errorf("Expected ECS from outside trust_ecs ignored, got fromECS=%v province %q", untrusted.FromECS, untrusted.Loc.Province)
	}
	// A family that does not match its address is no client.
	bad := &dns.EDNS0_SUBNET{Family: 1, SourceNetmask: 24, Address: net.ParseIP("2400::1")}
	if out := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.1.7"), bad); out.FromECS {
		t.Errorf("Expected an IPv6 address in a family 1 option ignored")
	}
}

// TestDecideAAAA: an AAAA query answers with IPv6 addresses only, and a
// record without any is NODATA: no winner, located nowhere.
func TestDecideAAAA(t *testing.T) {
	c, _ := newControl(t, "")
	out := decideQ(t, c, "v6.example.org", dns.TypeAAAA, udp("2400::1"), nil)
	var got []string
	for n, a := range out.Addresses() {
		got = append(got, n.ID+"="+a.String())
	}
	if winner(out) != "bj" || strings.Join(got, ",") != "bj=2001:db8::4" || out.Loc.Province != "BJ" || !out.Same {
		t.Errorf("Expected bj's IPv6 address for a Beijing client, got %q %v", winner(out), got)
	}
	if !out.Loc.Key.Is4() && out.KeyScope > 48 {
		t.Errorf("Expected an IPv6 key scope within /48, got /%d", out.KeyScope)
	}
	nodata := decideQ(t, c, "sh.example.org", dns.TypeAAAA, udp("2.0.0.1"), nil)
	if nodata.Decision.Winner != nil || nodata.Located || nodata.Servfail {
		t.Errorf("Expected NODATA for a record without IPv6, got %q", winner(nodata))
	}
	for range nodata.Addresses() {
		t.Errorf("Expected no address for NODATA")
	}
}

// TestDecideAllDown: with every node down the ladder fails open; a record
// with a fallback answers it, all_down servfail turns the rest to SERVFAIL,
// and neither counts as located.
func TestDecideAllDown(t *testing.T) {
	for _, mode := range []string{"open", "servfail"} {
		t.Run(mode, func(t *testing.T) {
			c, _ := newControl(t, "all_down "+mode+"\n")
			m := map[string]health.Status{}
			for _, n := range c.View().Table.Nodes {
				m[n.ID] = health.Status{State: health.StateDown}
			}
			c.Fix(health.NewSnapshot(m))
			out := decideQ(t, c, "sh.example.org", dns.TypeA, udp("2.0.0.1"), nil)
			if out.Decision.Tier != scoring.TierFailOpen || out.Servfail != (mode == "servfail") || out.Located != (mode == "open") {
				t.Errorf("Expected fail_open (servfail %v), got tier %s servfail %v located %v", mode == "servfail", out.Decision.Tier, out.Servfail, out.Located)
			}
			if mode == "servfail" && out.CNAME() != "" {
				t.Errorf("Expected no CNAME for SERVFAIL, got %q", out.CNAME())
			}
			fb := decideQ(t, c, "fb.example.org", dns.TypeA, udp("2.0.0.1"), nil)
			if fb.Decision.Tier != scoring.TierFallback || fb.CNAME() != "backup.example.net." || fb.Located || fb.Servfail {
				t.Errorf("Expected the fallback's CNAME, got tier %s cname %q located %v servfail %v", fb.Decision.Tier, fb.CNAME(), fb.Located, fb.Servfail)
			}
		})
	}
}

// TestDecideCanary: the canary's subnets are decided with the candidate
// table and the rest with the stable one, each subnet always the same way;
// with a canary every reply's scope is at least the client's /24.
func TestDecideCanary(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "candidate.yaml")
	// The candidate sends every www client to Beijing.
	if err := os.WriteFile(cand, []byte(strings.Replace(testsupport.FixtureNodes, "  - name: www.example.org\n",
		"  - name: www.example.org\n    nodes: [bj]\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := newControl(t, "canary "+cand+" 50\n")
	in, n := 0, 200
	for i := range n {
		remote := udp(netip.AddrFrom4([4]byte{1, 0, byte(i), 9}).String())
		out := decideQ(t, c, "www.example.org", dns.TypeA, remote, nil)
		if out.Canary == nil {
			t.Fatal("Expected the outcome to name the rollout")
		}
		picked := out.Canary.Picks(out.Loc.Key)
		if out.InCanary != picked {
			t.Fatalf("%v: in canary %v, but the rollout picks it: %v", remote, out.InCanary, picked)
		}
		if out.InCanary {
			in++
			if winner(out) != "bj" || out.Policy() != canary.PolicyCanary || out.View == c.View() {
				t.Errorf("%v: expected the candidate's bj under the canary policy, got %q %s", remote, winner(out), out.Policy())
			}
		} else if w := winner(out); w != "hz-a" && w != "hz-b" || out.Policy() != canary.PolicyStable {
			t.Errorf("%v: expected a stable Zhejiang node, got %q %s", remote, w, out.Policy())
		}
		if out.KeyScope != out.Loc.Key.Bits() {
			t.Errorf("%v: expected the key scope at the client's /%d with a canary, got /%d", remote, out.Loc.Key.Bits(), out.KeyScope)
		}
		// The pick is the subnet's: asking again gives the same.
		if again := decideQ(t, c, "www.example.org", dns.TypeA, remote, nil); again.InCanary != out.InCanary {
			t.Errorf("%v: canary pick changed between two queries", remote)
		}
	}
	// 50% of 200 subnets: far from both ends whatever the salt.
	if in < n/5 || in > n*4/5 {
		t.Errorf("Expected about half of %d subnets in the canary, got %d", n, in)
	}
	// sh is the same in both tables: the canary gets its answer too.
	c.Canary().SetPercent(100)
	if out := decideQ(t, c, "sh.example.org", dns.TypeA, udp("1.0.7.9"), nil); winner(out) != "sh" {
		t.Errorf("Expected sh's own answer in the canary too, got %q", winner(out))
	}
	c.Canary().SetPercent(0)
	if out := decideQ(t, c, "www.example.org", dns.TypeA, udp("1.0.7.9"), nil); out.InCanary || out.KeyScope > 24 {
		t.Errorf("Expected no canary at 0%%, got in canary %v", out.InCanary)
	}
}
