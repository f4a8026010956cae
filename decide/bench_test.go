package decide_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// benchControl loads the fixture's block with the extra lines in it.
func benchControl(b *testing.B, extra string) *control.Control {
	dir := testsupport.Fixture(b, testsupport.FixtureNodes)
	d := caddyfile.NewDispenser("Testfile", strings.NewReader("gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n"+extra+"}"))
	o, err := config.Parse(&d, nil, dir, config.Unique{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := control.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Stop() })
	return c
}

// BenchmarkDecide is one query's decision from the resolver's address:
// location (cached after the first), canary check, policy, scope.
func BenchmarkDecide(b *testing.B) {
	c := benchControl(b, "")
	v := c.View()
	q := &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA,
		Remote: &net.UDPAddr{IP: net.IPv4(1, 0, 1, 7), Port: 53}}
	var out decide.Outcome
	ctx := context.Background()
	c.Decider().Decide(ctx, q, &out)
	if out.Decision.Winner == nil || out.Loc.Province != "ZJ" {
		b.Fatalf("Expected a Zhejiang client answered, got %+v", out)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Decider().Decide(ctx, q, &out)
	}
}

// BenchmarkDecideResolvers is BenchmarkDecide with a resolver map: the
// query's resolver unmapped (the map looked up, the query observed), and
// mapped (decided for its population).
func BenchmarkDecideResolvers(b *testing.B) {
	c := benchControl(b, "resolvers {\nmin_samples 1\n}\n")
	v := c.View()
	ctx := context.Background()
	mapped := &net.UDPAddr{IP: net.IPv4(1, 0, 1, 8), Port: 53}
	// The mapped resolver sends ECS of a Shanghai client on some queries.
	for range 5 {
		c.Decider().Decide(ctx, &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: mapped,
			ECS: &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(2, 0, 0, 0).To4()}}, new(decide.Outcome))
	}
	c.Resolvers().Cycle(ctx)
	for _, bc := range []struct {
		name   string
		remote *net.UDPAddr
		pop    bool
	}{{"unmapped", &net.UDPAddr{IP: net.IPv4(1, 0, 2, 7), Port: 53}, false}, {"mapped", mapped, true}} {
		b.Run(bc.name, func(b *testing.B) {
			q := &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: bc.remote}
			var out decide.Outcome
			c.Decider().Decide(ctx, q, &out)
			if out.Decision.Winner == nil || (out.Population != nil) != bc.pop {
				b.Fatalf("Expected an answer, population %v; got %+v", bc.pop, out)
			}
			b.ReportAllocs()
			for b.Loop() {
				c.Decider().Decide(ctx, q, &out)
			}
		})
	}
}

// BenchmarkDecideECS decides ECS queries of 4,096 /24s in turn, placed
// by the precomputed table, through the server's decider (memo, whose
// entries the first two rounds make) and through one without the memo.
func BenchmarkDecideECS(b *testing.B) {
	c := benchControl(b, "")
	startTabled(b, c)
	v := c.View()
	ctx := context.Background()
	var qs []decide.Query
	for i := range 1 << 12 {
		// Zhejiang's /16, its two tied nodes picked per subnet, then the
		// country-wide /8.
		a := net.IPv4(1, 0, byte(i), 0).To4()
		if i >= 256 {
			a = net.IPv4(3, byte(i>>8), byte(i), 0).To4()
		}
		qs = append(qs, decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA,
			Remote: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 53), Port: 53},
			ECS:    &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: a}})
	}
	plain := decide.New(c, decide.OptionsOf(c.Options()))
	decide.NoMemo(plain)
	for _, bc := range []struct {
		name string
		d    *decide.Decider
	}{{"memo", c.Decider()}, {"nomemo", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			var out decide.Outcome
			for i := range 2 * len(qs) {
				bc.d.Decide(ctx, &qs[i%len(qs)], &out)
			}
			if out.Loc.Table == 0 || out.Decision.Winner == nil {
				b.Fatalf("Expected a client the table places, answered; got %+v", out)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bc.d.Decide(ctx, &qs[i&(len(qs)-1)], &out)
				i++
			}
		})
	}
}
