package gslb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/gslbdns/gslb/decide"

	"github.com/miekg/dns"
)

// FuzzParseECS: whatever EDNS a query carries, an accepted ECS option is
// one the rest of the plugin can trust.
func FuzzParseECS(f *testing.F) {
	m := query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))
	b, _ := m.Pack()
	f.Add(b)
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := new(dns.Msg)
		if r.Unpack(wire) != nil {
			return
		}
		ecs, err := parseECS(r)
		if err != nil || ecs == nil || ecs.Family == 0 {
			return
		}
		a, ok := decide.ECSAddr(ecs)
		if !ok {
			t.Fatalf("Accepted ECS %v whose address does not match its family", ecs)
		}
		if p, _ := a.Prefix(int(ecs.SourceNetmask)); p.Addr() != a || int(ecs.SourceNetmask) > a.BitLen() {
			t.Fatalf("Accepted ECS %v with bits after its prefix", ecs)
		}
	})
}

// FuzzServeDNS: any query the DNS library can unpack gets an answer or an
// rcode, never a panic, and the answer packs.
func FuzzServeDNS(f *testing.F) {
	g := newFixtureGSLB(f, fixtureNodes, "")
	for _, q := range []*dns.Msg{
		query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		query("v6.example.org", dns.TypeAAAA, subnet("2400::/48")),
		query("nope.example.org", dns.TypeTXT, nil),
	} {
		b, _ := q.Pack()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := new(dns.Msg)
		if r.Unpack(wire) != nil || len(r.Question) == 0 {
			return
		}
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := g.ServeDNS(context.Background(), rec, r); err != nil {
			return
		}
		if rec.Msg != nil {
			if _, err := rec.Msg.Pack(); err != nil {
				t.Fatalf("Reply does not pack: %v\n%v", err, rec.Msg)
			}
		}
	})
}

// FuzzCorefile: any gslb block is set up or rejected with an error that
// names the Corefile.
func FuzzCorefile(f *testing.F) {
	dir := fixture(f, fixtureNodes)
	f.Add("geoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\nttl 30\nredis 127.0.0.1:6379 {\n timeout 20ms\n}\nonline https://geo.example.net/{ip}\nweights 0.5 0.3 0.2\n")
	f.Add("geoip city.mmdb\nnodes nodes.yaml\nfallthrough\nreload 0\ncache_size 10\n")
	f.Fuzz(func(t *testing.T, body string) {
		if strings.ContainsAny(body, "{}") && strings.Count(body, "{") != strings.Count(body, "}") {
			return // an unbalanced block is the Corefile lexer's business
		}
		c := caddy.NewTestController("dns", "gslb example.org {\n"+body+"\n}")
		dnsserver.GetConfig(c).Root = dir
		g, err := parse(c)
		if err != nil {
			if !strings.Contains(err.Error(), "Testfile:") && !strings.Contains(err.Error(), filepath.Base(dir)) {
				t.Fatalf("Error without a place: %v", err)
			}
			return
		}
		g.stop()
		if g.ctl.View() == nil {
			t.Fatalf("Set up without a view")
		}
	})
}

// FuzzPackName: packName packs what it takes exactly as the DNS library
// does, and leaves the rest to it.
func FuzzPackName(f *testing.F) {
	if _, ok := packName("www.example.org.", make([]byte, 64), 12); !ok {
		f.Fatal("packName left a plain name to the DNS library")
	}
	for _, s := range []string{".", "www.example.org.", "WwW.Example.ORG.", "a..b.", "a.b", `a\.b.`, `a\065.`,
		strings.Repeat("a", 63) + ".", strings.Repeat("a", 64) + ".", strings.Repeat("abcdefg.", 31) + "x.", strings.Repeat("abcdefg.", 32), "-._.*."} {
		f.Add(s, 12)
	}
	f.Fuzz(func(t *testing.T, name string, off int) {
		off &= 0x1ff
		got := make([]byte, 600)
		end, ok := packName(name, got, off)
		if !ok {
			return
		}
		want := make([]byte, 600)
		wend, err := dns.PackDomainName(name, want, off, nil, false)
		if err != nil {
			t.Fatalf("%q: packName took it, the DNS library refuses it: %v", name, err)
		}
		if end != wend || string(got[off:end]) != string(want[off:wend]) {
			t.Fatalf("%q: packName % x, the DNS library % x", name, got[off:end], want[off:wend])
		}
	})
}
