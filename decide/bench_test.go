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

// BenchmarkDecide is one query's decision from the resolver's address:
// location (cached after the first), canary check, policy, scope.
func BenchmarkDecide(b *testing.B) {
	dir := testsupport.Fixture(b, testsupport.FixtureNodes)
	d := caddyfile.NewDispenser("Testfile", strings.NewReader("gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n}"))
	o, err := config.Parse(&d, nil, dir, config.Unique{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := control.New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
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
