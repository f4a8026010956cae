package gslb

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// discard is a ResponseWriter that drops the reply, so the benchmark
// measures the decision and the reply's construction only.
type discard struct{ test.ResponseWriter }

func (*discard) WriteMsg(*dns.Msg) error { return nil }

var resolver = &net.UDPAddr{IP: net.IPv4(192, 0, 2, 53), Port: 53}

// RemoteAddr is what a real server's writer returns: an address it already
// has, not one parsed per call.
func (*discard) RemoteAddr() net.Addr { return resolver }

// BenchmarkServeDNS is one whole decision: ECS parsing, location (an LRU
// hit after the first query), the ladder, the score and the reply.
func BenchmarkServeDNS(b *testing.B) {
	cand := filepath.Join(b.TempDir(), "candidate.yaml")
	if err := os.WriteFile(cand, []byte(fixtureNodes), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		ecs   string
		extra string
	}{
		{"province_isp", "1.0.1.0/24", ""},
		{"country_only", "3.0.0.0/24", ""},
		{"private", "10.0.0.0/24", ""},
		// Every subnet in a canary that counts its decisions for the rollback.
		{"canary", "1.0.1.0/24", "canary " + cand + " 100 {\n rollback_cross 0.9\n}\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := newFixtureGSLB(b, fixtureNodes, bc.extra)
			m := query("www.example.org", dns.TypeA, subnet(bc.ecs))
			w := &discard{}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if rc, _ := g.ServeDNS(ctx, w, m); rc != dns.RcodeSuccess {
					b.Fatalf("Unexpected rcode %d", rc)
				}
			}
		})
	}
}

// BenchmarkServeDNSSigned is BenchmarkServeDNS's province_isp query with
// the DO bit in a signed zone: once its RRsets' signatures are cached, the
// signing is a cache lookup per RRset. The first signature's cost is
// sign's BenchmarkSignFirst.
func BenchmarkServeDNSSigned(b *testing.B) {
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	priv, err := k.Generate(256)
	if err != nil {
		b.Fatal(err)
	}
	base := filepath.Join(b.TempDir(), "Kexample.org.+013+00001")
	if err := os.WriteFile(base+".key", []byte(k.String()+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(base+".private", []byte(k.PrivateKeyString(priv)), 0o600); err != nil {
		b.Fatal(err)
	}
	g := newFixtureGSLB(b, fixtureNodes, "dnssec "+base+"\n")
	for _, bc := range []struct {
		name  string
		qname string
	}{{"address", "www.example.org"}, {"nxdomain", "nothere.example.org"}} {
		b.Run(bc.name, func(b *testing.B) {
			m := query(bc.qname, dns.TypeA, subnet("1.0.1.0/24"))
			m.IsEdns0().SetDo()
			w := &discard{}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if rc, _ := g.ServeDNS(ctx, w, m); rc != dns.RcodeSuccess {
					b.Fatalf("Unexpected rcode %d", rc)
				}
			}
		})
	}
}
