package gslb

import (
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	"github.com/gslbdns/gslb/internal/testsupport"
)

const fixtureNodes = testsupport.FixtureNodes

func fixture(t testing.TB, nodes string) string { return testsupport.Fixture(t, nodes) }

// newTestGSLB parses a gslb block whose relative paths resolve in dir.
func newTestGSLB(t testing.TB, dir, block string) *GSLB {
	t.Helper()
	c := caddy.NewTestController("dns", block)
	dnsserver.GetConfig(c).Root = dir
	g, err := parse(c)
	if err != nil {
		t.Fatalf("Parse %q: %v", block, err)
	}
	t.Cleanup(func() { g.stop() })
	return g
}
