package gslb

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	_ "github.com/coredns/coredns/plugin/hosts"
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
	g := newFixtureGSLB(b, fixtureNodes, "dnssec "+benchKey(b)+"\n")
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

// BenchmarkServeDNSDenial is a query with the DO bit for www and for a
// random name, in a zone signed with each denial, the reply packed: the
// flood of random names costs a chain's search, where black lies sign.
func BenchmarkServeDNSDenial(b *testing.B) {
	base := benchKey(b)
	for _, denial := range []string{"nsec", "nsec3", "black_lies"} {
		g := newFixtureGSLB(b, fixtureNodes, "dnssec "+base+" {\ndenial "+denial+"\n}\n")
		for _, random := range []bool{false, true} {
			name := denial + "/www"
			if random {
				name = denial + "/random"
			}
			b.Run(name, func(b *testing.B) {
				w := &connWriter{}
				ctx := context.Background()
				m := query("www.example.org", dns.TypeA, nil)
				m.SetEdns0(1232, true)
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					if random {
						i++
						m.Question[0].Name = strconv.Itoa(i) + "x.example.org."
					}
					g.ServeDNS(ctx, w, m)
				}
			})
		}
	}
}

// benchKey writes a new ECDSA P-256 KSK for example.org and returns its
// base name.
func benchKey(b *testing.B) string {
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
	return base
}

// connWriter stands in for the server's own writer: WriteMsg packs the
// message, as the server's does, and Write drops the bytes.
type connWriter struct {
	test.ResponseWriter
	rcode int
}

func (w *connWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (w *connWriter) Write(b []byte) (int, error) {
	w.rcode = int(b[3] & 0xf)
	return len(b), nil
}
func (*connWriter) RemoteAddr() net.Addr { return resolver }
func (*connWriter) wireConn()            {}

// BenchmarkServeDNSGoroutine serves each query as the server does: on a
// goroutine of its own, which starts on a small stack and grows it, behind
// CoreDNS's scrubbing writer, with the reply packed. hosts is CoreDNS's
// hosts plugin answering the same name, in the same form, without and with
// ECS.
func BenchmarkServeDNSGoroutine(b *testing.B) {
	type bcase struct {
		name  string
		qname string
		qtype uint16
		ecs   func(i int) string
		extra string
	}
	fixed := func(s string) func(int) string { return func(int) string { return s } }
	for _, bc := range []bcase{
		{"hit", "www.example.org", dns.TypeA, fixed("1.0.1.0/24"), ""},
		// A new /24 each query, beyond a 256-entry location cache.
		{"miss", "www.example.org", dns.TypeA, func(i int) string {
			return net.IPv4(3, byte(i>>8), byte(i), 0).String() + "/24"
		}, "cache_size 256\n"},
		// The same with the databases' networks precomputed: a new /24 is
		// a lookup in the table, which the location cache leaves alone.
		{"miss_precomputed", "www.example.org", dns.TypeA, func(i int) string {
			return net.IPv4(3, byte(i>>8), byte(i), 0).String() + "/24"
		}, "cache_size 256\nprecompute 64MiB\n"},
		{"negative", "nothere.example.org", dns.TypeA, fixed("1.0.1.0/24"), ""},
		{"aaaa", "v6.example.org", dns.TypeAAAA, fixed("2400::/48"), ""},
		{"answers2", "www.example.org", dns.TypeA, fixed("1.0.1.0/24"), "answers 2\n"},
		{"noecs", "www.example.org", dns.TypeA, nil, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// The response rate limit counts every reply, at a rate it
			// does not reach: its cost is in the figures.
			g := newFixtureGSLB(b, fixtureNodes, bc.extra+"rrl {\nanswers 1000000\ndenials 1000000\n}\n")
			if strings.Contains(bc.extra, "precompute") {
				if err := g.start(); err != nil { // the walk runs once started
					b.Fatal(err)
				}
				for deadline := time.Now().Add(time.Minute); !g.ctl.Locator().Tabled(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatal("No table within a minute")
					}
				}
			}
			var ms []*dns.Msg
			for i := range 1 << 12 {
				var ecs *dns.EDNS0_SUBNET
				if bc.ecs != nil {
					ecs = subnet(bc.ecs(i))
				}
				ms = append(ms, query(bc.qname, bc.qtype, ecs))
			}
			benchGoroutines(b, g, ms)
		})
	}
	// hosts_ecs is hosts asked hit's query: the server unpacks its ECS
	// option for hosts too, so the difference to hit is gslb's.
	for _, hc := range []struct {
		name string
		ecs  *dns.EDNS0_SUBNET
	}{{"hosts", nil}, {"hosts_ecs", subnet("1.0.1.0/24")}} {
		b.Run(hc.name, func(b *testing.B) {
			c := caddy.NewTestController("dns", "hosts /dev/null example.org {\n192.0.2.1 www.example.org\n}")
			setup, err := caddy.DirectiveAction("dns", "hosts")
			if err != nil {
				b.Fatal(err)
			}
			if err := setup(c); err != nil {
				b.Fatal(err)
			}
			h := dnsserver.GetConfig(c).Plugin[0](nil)
			benchGoroutines(b, h, []*dns.Msg{query("www.example.org", dns.TypeA, hc.ecs)})
		})
	}
	benchChains(b)
}

// benchGoroutines serves ms in turn through a CoreDNS server whose
// plugin chain is h, each on a new goroutine that unpacks the query first,
// as the DNS library's server does.
func benchGoroutines(b *testing.B, h plugin.Handler, ms []*dns.Msg) {
	cfg := &dnsserver.Config{Zone: ".", Port: "53",
		Plugin: []plugin.Plugin{func(plugin.Handler) plugin.Handler { return h }}}
	s, err := dnsserver.NewServer("dns://:53", []*dnsserver.Config{cfg})
	if err != nil {
		b.Fatal(err)
	}
	benchServer(b, context.Background(), s, ms)
}

// benchServer is benchGoroutines through the server s, with ctx.
func benchServer(b *testing.B, ctx context.Context, s *dnsserver.Server, ms []*dns.Msg) {
	var err error
	wires := make([][]byte, len(ms))
	for i, m := range ms {
		if wires[i], err = m.Pack(); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan int)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		wire := wires[i%len(wires)]
		i++
		go func() {
			m := new(dns.Msg)
			if err := m.Unpack(wire); err != nil {
				done <- -1
				return
			}
			w := &connWriter{}
			s.ServeDNS(ctx, w, m)
			done <- w.rcode
		}()
		if rc := <-done; rc != dns.RcodeSuccess && rc != dns.RcodeNameError {
			b.Fatalf("Unexpected rcode %d", rc)
		}
	}
}
