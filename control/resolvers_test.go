package control

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"
	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestResolversSurviveReload: a Corefile reload (the old instance stops,
// the new one of the same block starts) keeps the populations learned.
func TestResolversSurviveReload(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	block := "gslb example.org {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\nresolvers {\nmin_samples 3\n}\n}"
	old := newTestControl(t, dir, block)
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	res := netip.MustParseAddr("1.0.1.53")
	for range 5 {
		old.Resolvers().Observe(res, netip.MustParseAddr("2.0.0.7"), 1, 24, true, false, 1, 60)
	}
	if old.Resolvers().Cycle(context.Background()).Lookup(res) == nil {
		t.Fatalf("No population before the reload")
	}
	old.Stop()
	cur := newTestControl(t, dir, block)
	if err := cur.Start(); err != nil {
		t.Fatal(err)
	}
	p := cur.Resolvers().Snapshot().Lookup(res)
	if p == nil || p.Loc.Province != "SH" || p.Samples < 4.99 {
		t.Errorf("After the reload: %+v, want the 5 Shanghai clients learned before", p)
	}
	// Another block does not take it.
	other := newTestControl(t, dir, strings.Replace(block, "example.org", "example.org example.net", 1))
	other.Start()
	if p := other.Resolvers().Snapshot().Lookup(res); p != nil {
		t.Errorf("Another block took the map: %+v", p)
	}
}

// TestResolversKeyFile: the beacon key file's errors name the Corefile
// line and the file.
func TestResolversKeyFile(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	write := func(name, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("edge.token", "edge-token-5f1c9a7e3b2d4068aa\n", 0o600)
	write("short.key", "short-key\n", 0o600)
	write("open.key", "beacon-key-0123456789abcdef\n", 0o644)
	write("good.key", "beacon-key-0123456789abcdef\n", 0o600)
	head := "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\nadmin 127.0.0.1:0\nfeed {\nsource e {\ntoken_file edge.token\nnodes *\n}\n}\n"
	for _, tc := range []struct{ block, want string }{
		{"resolvers {\nbeacon www.example.org\nkey_file short.key\n}", "Testfile:11 - Error during parsing: resolvers: key_file"},
		{"resolvers {\nbeacon www.example.org\nkey_file open.key\n}", "readable by others"},
		{"resolvers {\nbeacon nope.example.org\nkey_file good.key\n}", "beacon nope.example.org. is not a record of node table"},
	} {
		d := head + tc.block + "\n}"
		if _, err := loadErr(t, dir, d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.block, err, tc.want)
		}
	}
	if c, err := loadErr(t, dir, head+"resolvers {\nbeacon www.example.org\nkey_file good.key\n}\n}"); err != nil || c.Resolvers().Labeler() == nil {
		t.Errorf("A good key: %v", err)
	}
}

// loadErr loads a gslb block whose relative paths resolve in dir.
func loadErr(t *testing.T, dir, block string) (*Control, error) {
	t.Helper()
	d := caddyfile.NewDispenser("Testfile", strings.NewReader(block))
	o, err := config.Parse(&d, nil, dir, config.Unique{})
	if err != nil {
		return nil, err
	}
	c, err := New(o)
	if err == nil {
		t.Cleanup(func() { c.Stop() })
	}
	return c, err
}

// TestHTTPSObservedOnce: an HTTPS query, decided for A and AAAA, counts
// once in the resolver map, as one query.
func TestHTTPSObservedOnce(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	c := newTestControl(t, dir, "gslb example.org https-once.test {\ngeoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\nresolvers {\nmin_samples 3\n}\n}")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	v := c.View()
	q := decide.Query{View: v, Record: v.Table.Records["www.example.org."], Remote: &net.UDPAddr{IP: net.IPv4(1, 0, 1, 53), Port: 53},
		ECS: &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(2, 0, 0, 0).To4()}}
	if q.Record == nil {
		t.Fatal("no www.example.org. in the fixture's table")
	}
	// The map is the block's across instances: count from what it holds.
	counted := func() uint64 {
		c.Resolvers().Cycle(context.Background())
		total := uint64(0)
		for _, n := range c.Resolvers().Observatory().Queries {
			total += n
		}
		return total
	}
	before := counted()
	var out4, out6 decide.Outcome
	c.Decider().DecideHTTPS(context.Background(), &q, &out4, &out6)
	if n := counted() - before; n != 1 {
		t.Errorf("One HTTPS query counted %d times: %v", n, c.Resolvers().Observatory().Queries)
	}
}
