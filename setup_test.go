package gslb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/scoring"
)

func TestSetup(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	base := "geoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n"
	tests := []struct {
		name    string
		input   string
		wantErr string // substring; "" means success
	}{
		{"minimal", "gslb example.org {\n" + base + "}", ""},
		{"server block zones", "gslb {\n" + base + "}", ""},
		{"all options", "gslb example.org {\n" + base + `ttl 30
ecs_min_prefix 20 48
weights 0.6 0.3 0.1
max_load 0.9
fallthrough
all_down servfail
reload 5s
cache_size 1000
cache_ttl 1h
}`, ""},
		{"redis and online", "gslb example.org {\n" + base + `redis 127.0.0.1:6379 {
  username gslb-fleet
  password secret
  db 2
  timeout 50ms
  ttl 12h
}
online https://geo.example.net/v1/{ip} {
  header X-Api-Key k
  timeout 500ms
  max_qps 10
  breaker 5 1m
}
}`, ""},
		{"no geoip", "gslb example.org {\nnodes nodes.yaml\n}", "geoip FILE is required"},
		{"no nodes", "gslb example.org {\ngeoip city.mmdb\n}", "nodes FILE is required"},
		{"unknown property", "gslb example.org {\n" + base + "colour blue\n}", `unknown property "colour"`},
		{"bad ttl", "gslb example.org {\n" + base + "ttl 0\n}", "ttl"},
		{"ttl junk", "gslb example.org {\n" + base + "ttl soon\n}", "ttl"},
		{"ecs v4 too long", "gslb example.org {\n" + base + "ecs_min_prefix 33 56\n}", "ecs_min_prefix"},
		{"ecs missing v6", "gslb example.org {\n" + base + "ecs_min_prefix 24\n}", "ecs_min_prefix: needs two prefix lengths, V4 and V6"},
		{"ecs three", "gslb example.org {\n" + base + "ecs_min_prefix 24 48 56\n}", "needs two prefix lengths, V4 and V6"},
		{"ecs v6 too long", "gslb example.org {\n" + base + "ecs_min_prefix 24 129\n}", `V6 "129" is not a whole number in 0..128`},
		{"weights negative", "gslb example.org {\n" + base + "weights -1 0 0\n}", "weights"},
		{"weights zero", "gslb example.org {\n" + base + "weights 0 0 0\n}", "at least one weight"},
		{"max_load above 1", "gslb example.org {\n" + base + "max_load 1.5\n}", "max_load"},
		{"max_load zero", "gslb example.org {\n" + base + "max_load 0\n}", "above 0"},
		{"all_down junk", "gslb example.org {\n" + base + "all_down maybe\n}", "neither open nor servfail"},
		{"extra argument", "gslb example.org {\n" + base + "spread 0.1 40\n}", `unexpected argument "40"`},
		{"ttl min above max", "gslb example.org {\n" + base + "ttl 30 40\n}", `ttl: MIN "40" is not a whole number in 1..30`},
		{"reload too short", "gslb example.org {\n" + base + "reload 10ms\n}", "reload"},
		{"missing geoip file", "gslb example.org {\ngeoip nope.mmdb\nnodes nodes.yaml\n}", "nope.mmdb"},
		{"not a database", "gslb example.org {\ngeoip nodes.yaml\nnodes nodes.yaml\n}", "nodes.yaml"},
		{"swapped databases", "gslb example.org {\ngeoip asn.mmdb\nasn city.mmdb\nnodes nodes.yaml\n}", `asn.mmdb is a database of type "GeoLite2-ASN", not a MaxMind City or Country database: give it to asn`},
		{"city as asn", "gslb example.org {\ngeoip city.mmdb\nasn city.mmdb\nnodes nodes.yaml\n}", `city.mmdb is a database of type "GeoLite2-City", not a MaxMind ASN or ISP database: give it to geoip`},
		{"redis empty username", "gslb example.org {\n" + base + "redis 127.0.0.1:6379 {\n username \"\"\n}\n}", "redis: username is empty"},
		{"redis empty password", "gslb example.org {\n" + base + "redis 127.0.0.1:6379 {\n password \"\"\n}\n}", "redis: password is empty"},
		{"online empty header", "gslb example.org {\n" + base + "online https://geo.example.net/{ip} {\n header X-Api-Key \"\"\n}\n}", "online: header X-Api-Key is empty"},
		{"online bearer without token", "gslb example.org {\n" + base + "online https://geo.example.net/{ip} {\n header Authorization \"Bearer \"\n}\n}", "online: header Authorization is empty"},
		{"online empty key parameter", "gslb example.org {\n" + base + "online https://geo.example.net/{ip}?lang=zh&apikey= {\n}\n}", "online: URL query parameter apikey is empty"},
		{"missing node file", "gslb example.org {\ngeoip city.mmdb\nnodes nope.yaml\n}", "nope.yaml"},
		{"record outside zones", "gslb other.org {\n" + base + "}", "outside the zones"},
		{"twice", "gslb example.org {\n" + base + "}\ngslb example.org {\n" + base + "}", "only be used once"},
		{"redis no address", "gslb example.org {\n" + base + "redis {\n}\n}", "ADDRESS"},
		{"redis unknown", "gslb example.org {\n" + base + "redis 127.0.0.1:6379 {\n colour blue\n}\n}", `redis: unknown property "colour"`},
		{"online no ip", "gslb example.org {\n" + base + "online https://geo.example.net/v1 {\n}\n}", "online"},
		{"online unknown", "gslb example.org {\n" + base + "online https://geo.example.net/{ip} {\n colour blue\n}\n}", `online: unknown property "colour"`},
		{"online header arity", "gslb example.org {\n" + base + "online https://geo.example.net/{ip} {\n header X\n}\n}", "header NAME VALUE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			c.ServerBlockKeys = []string{"example.org:53"}
			dnsserver.GetConfig(c).Root = dir
			g, err := parse(c)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Expected no error, got %v", err)
				}
				g.stop()
				return
			}
			if err == nil {
				g.stop()
				t.Fatalf("Expected an error containing %q, got none", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Expected an error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// A bad Corefile line fails startup and names the line.
func TestSetupErrorNamesLine(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	tests := []struct {
		input string
		line  string
	}{
		{"gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\nmax_load 7\n}", "Testfile:4"},
		{"gslb example.org {\ngeoip missing.mmdb\n\nnodes nodes.yaml\n}", "Testfile:2"},
		{"gslb example.org {\ngeoip city.mmdb\n\n\nnodes missing.yaml\n}", "Testfile:5"},
	}
	for _, tc := range tests {
		c := caddy.NewTestController("dns", tc.input)
		dnsserver.GetConfig(c).Root = dir
		_, err := parse(c)
		if err == nil || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("Expected an error naming %s for %q, got %v", tc.line, tc.input, err)
		}
	}
}

func TestSetupDefaults(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	g := newTestGSLB(t, dir, "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\n}")
	o := g.opts
	if o.TTL != 60 || o.ECSMin4 != 24 || o.ECSMin6 != 48 {
		t.Errorf("Expected ttl 60 and ecs_min_prefix 24 48, got %d %d %d", o.TTL, o.ECSMin4, o.ECSMin6)
	}
	if o.Params != scoring.DefaultParams {
		t.Errorf("Expected default weights and max_load, got %+v", o.Params)
	}
	if o.AllDownServfail || o.Reload != 30*time.Second || o.CacheSize != 1000000 || o.CacheTTL != 12*time.Hour {
		t.Errorf("Unexpected defaults: %+v", o)
	}
	if o.Redis != nil || o.Online != nil {
		t.Errorf("Expected no redis and no online API by default")
	}
	if len(g.Zones) != 1 || g.Zones[0] != "example.org." {
		t.Errorf("Expected zone example.org., got %v", g.Zones)
	}
}

// TestSetupSubBlocks: redis and online work with and without a block, on
// any line of the gslb block, and name their errors once.
func TestSetupSubBlocks(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	base := "geoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n"
	tests := []struct {
		name    string
		input   string
		check   func(*GSLB) string // "" when the parse is as expected
		wantErr string
	}{
		{"redis line then ttl", "redis 127.0.0.1:6379\nttl 30\n", func(g *GSLB) string {
			if g.opts.TTL != 30 || g.opts.Redis == nil || g.opts.Redis.Addrs[0] != "127.0.0.1:6379" {
				return fmt.Sprintf("ttl %d redis %+v", g.opts.TTL, g.opts.Redis)
			}
			return ""
		}, ""},
		{"redis line then cache_size", "redis 127.0.0.1:6379\ncache_size 1000\n", func(g *GSLB) string {
			if g.opts.CacheSize != 1000 {
				return fmt.Sprintf("cache_size %d", g.opts.CacheSize)
			}
			return ""
		}, ""},
		{"online line then ttl", "online https://geo.example.net/{ip}\nttl 20\n", func(g *GSLB) string {
			if g.opts.TTL != 20 || g.opts.Online == nil {
				return fmt.Sprintf("ttl %d online %+v", g.opts.TTL, g.opts.Online)
			}
			return ""
		}, ""},
		{"blocks on one line", "redis 127.0.0.1:6379 { timeout 50ms }\nonline https://geo.example.net/{ip} { header X-Api-Key k }\nttl 25\n", func(g *GSLB) string {
			if g.opts.TTL != 25 || g.opts.Redis.Timeout != 50*time.Millisecond || g.opts.Online.Headers.Get("X-Api-Key") != "k" {
				return fmt.Sprintf("ttl %d redis %+v online %+v", g.opts.TTL, g.opts.Redis, g.opts.Online)
			}
			return ""
		}, ""},
		{"block then more options", "redis 127.0.0.1:6379 {\n  timeout 30ms\n}\nttl 35\n", func(g *GSLB) string {
			if g.opts.TTL != 35 || g.opts.Redis.Timeout != 30*time.Millisecond {
				return fmt.Sprintf("ttl %d redis %+v", g.opts.TTL, g.opts.Redis)
			}
			return ""
		}, ""},
		{"redis error prefixed once", "redis a:1 b:2 {\n  db 1\n}\n", nil, "redis: db 1 is not supported by a cluster"},
		{"online error prefixed once", "online https://geo.example.net/v1\n", nil, "online: URL"},
		{"junk after the address", "redis 127.0.0.1:6379 { timeout 50ms } junk\n", nil, `unexpected argument "junk"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", "gslb example.org {\n"+base+tc.input+"}")
			dnsserver.GetConfig(c).Root = dir
			g, err := parse(c)
			if tc.wantErr != "" {
				if err == nil {
					g.stop()
					t.Fatalf("Expected an error containing %q, got none", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || strings.Count(err.Error(), "redis:")+strings.Count(err.Error(), "online:") > 1 {
					t.Fatalf("Expected an error containing %q once, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Expected no error, got %v", err)
			}
			defer g.stop()
			if msg := tc.check(g); msg != "" {
				t.Errorf("Unexpected options: %s", msg)
			}
		})
	}
}

// TestSetupChineseData: ipdb and overrides options, and the errors that
// name their Corefile line.
func TestSetupChineseData(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{{Network: "1.0.1.0/24", CountryName: "中国", RegionName: "浙江", CCode: "CN"}})
	if err := os.WriteFile(filepath.Join(dir, "ov.yaml"), []byte("overrides:\n  - cidr: 1.0.1.0/24\n    nodes: [sh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testsupport.WriteIP2Region(t, dir, "v4.xdb", []testsupport.XDBRow{{Network: "1.0.1.0/24", Country: "中国", Province: "浙江省", ISO: "CN"}})
	testsupport.WriteIP2Region(t, dir, "v6.xdb", []testsupport.XDBRow{{Network: "240e::/20", Country: "中国", Province: "广东省", ISO: "CN"}})
	if err := os.MkdirAll(filepath.Join(dir, "lists"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"lists/chinanet.txt": "1.0.1.0/24\n", "lists/cmcc.txt": "2409:8000::/20\n", "bad.txt": "1.0.1.0/24\n1.0.1.7/24\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, input, wantErr string
	}{
		{"ipdb alone", "ipdb test.ipdb\nnodes nodes.yaml\n", ""},
		{"all three", "geoip city.mmdb\nasn asn.mmdb\nipdb test.ipdb\nnodes nodes.yaml\noverrides ov.yaml\n", ""},
		{"no database", "nodes nodes.yaml\n", "geoip FILE is required (or ipdb FILE, or ip2region FILE)"},
		{"ip2region alone", "ip2region v4.xdb\nnodes nodes.yaml\n", ""},
		{"ip2region both families", "geoip city.mmdb\nip2region v6.xdb v4.xdb\nipdb test.ipdb\nnodes nodes.yaml\n", ""},
		{"ip2region three files", "ip2region v4.xdb v6.xdb v4.xdb\nnodes nodes.yaml\n", "ip2region: needs one or two xdb files (IPv4, IPv6), got 3"},
		{"ip2region no file", "ip2region\nnodes nodes.yaml\n", "ip2region: needs one or two xdb files"},
		{"ip2region two of a family", "ip2region v4.xdb v4.xdb\nnodes nodes.yaml\n", "Testfile:2"},
		{"missing ip2region", "geoip city.mmdb\nip2region nope.xdb\nnodes nodes.yaml\n", "Testfile:3"},
		{"not an xdb", "geoip city.mmdb\nnodes nodes.yaml\nip2region nodes.yaml\n", "Testfile:4 - Error during setup: ip2region"},
		{"carrier lists", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists lists\n", ""},
		{"carrier list files", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists lists/chinanet.txt lists/cmcc.txt\n", ""},
		{"carrier lists priority", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists lists\ncarrier_lists_priority agreeing_databases\n", ""},
		{"carrier lists priority junk", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists lists\ncarrier_lists_priority asn\n", `carrier_lists_priority: "asn" is neither list nor agreeing_databases`},
		{"carrier lists priority without lists", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists_priority agreeing_databases\n", "carrier_lists_priority at line 4: no carrier_lists to give it to"},
		{"carrier lists no file", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists\n", "Wrong argument count"},
		{"missing carrier list", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists nope.txt\n", "Testfile:4 - Error during setup: carrier_lists"},
		{"bad carrier list", "geoip city.mmdb\nnodes nodes.yaml\ncarrier_lists bad.txt\n", "bad.txt:2: 1.0.1.7/24 has host bits set"},
		{"missing ipdb", "ipdb nope.ipdb\nnodes nodes.yaml\n", "Testfile:2"},
		{"not an ipdb", "geoip city.mmdb\nipdb nodes.yaml\nnodes nodes.yaml\n", "Testfile:3"},
		{"missing overrides", "geoip city.mmdb\nnodes nodes.yaml\noverrides nope.yaml\n", "Testfile:4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", "gslb example.org {\n"+tc.input+"}")
			dnsserver.GetConfig(c).Root = dir
			g, err := parse(c)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Expected no error, got %v", err)
				}
				g.stop()
				return
			}
			if err == nil {
				g.stop()
				t.Fatalf("Expected an error containing %q, got none", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Expected an error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestSetupSteering: the steering options, their defaults and their errors.
func TestSetupSteering(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	if err := os.WriteFile(filepath.Join(dir, "q.yaml"), []byte("quality: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "geoip city.mmdb\nnodes nodes.yaml\n"
	g := newTestGSLB(t, dir, "gslb example.org {\n"+base+"}")
	if p := g.opts.Params; p.Spread != 0.1 || p.Answers != 1 || p.MaxLoss != 0.2 || p.ShedHigh != 0 || g.opts.Cooldown != time.Minute || g.opts.QualityMaxAge != 10*time.Minute {
		t.Errorf("Defaults: %+v cooldown %v quality_max_age %v", p, g.opts.Cooldown, g.opts.QualityMaxAge)
	}
	g = newTestGSLB(t, dir, "gslb example.org {\n"+base+"spread 0.2\nshed_load 0.6 0.9\ncooldown 30s\nanswers 2\nquality q.yaml\nquality_max_age 5m\nmax_loss 0.1\nweights 0.4 0.2 0.1 0.3\n}")
	want := scoring.Params{Weights: scoring.Weights{0.4, 0.2, 0.1, 0.3}, MaxLoad: 0.8, Spread: 0.2, ShedLow: 0.6, ShedHigh: 0.9, MaxLoss: 0.1, MaxErrorRate: 0.2, Answers: 2}
	if g.opts.Params != want || g.opts.Cooldown != 30*time.Second || g.opts.QualityMaxAge != 5*time.Minute || g.opts.Quality != filepath.Join(dir, "q.yaml") {
		t.Errorf("Got %+v %v %v %s", g.opts.Params, g.opts.Cooldown, g.opts.QualityMaxAge, g.opts.Quality)
	}
	for _, tc := range []struct{ input, want string }{
		{"spread 1.5", "spread"},
		{"shed_load 0.9 0.6", "shed_load: HIGH 0.6 must be above LOW 0.9"},
		{"shed_load 0.6", "Wrong argument count"},
		{"cooldown soon", "cooldown"},
		{"answers 0", "answers"},
		{"answers 9", "answers"},
		{"max_loss 0", "max_loss: must be above 0"},
		{"quality_max_age 10ms", "quality_max_age"},
		{"weights 1 1 1 1 1 1 1", `unexpected argument "1"`},
		{"quality nope.yaml", "Testfile:4"},
	} {
		c := caddy.NewTestController("dns", "gslb example.org {\n"+base+tc.input+"\n}")
		dnsserver.GetConfig(c).Root = dir
		g, err := parse(c)
		if err == nil {
			g.stop()
			t.Errorf("%q: no error, want one containing %q", tc.input, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
}

// TestSetupMaxFileSize: max_file_size takes bytes or KiB/MiB/GiB, defaults
// to 16 MiB, and a file over it fails startup naming the file, its size
// and the limit.
func TestSetupMaxFileSize(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	block := func(extra string) string {
		return "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\n" + extra + "\n}"
	}
	if got := newTestGSLB(t, dir, block("")).opts.MaxFileSize; got != 16<<20 {
		t.Errorf("Expected a default of 16 MiB, got %d", got)
	}
	for in, want := range map[string]int64{"4096": 4096, "64KiB": 64 << 10, "32MiB": 32 << 20, "4GiB": 4 << 30} {
		if got := newTestGSLB(t, dir, block("max_file_size "+in)).opts.MaxFileSize; got != want {
			t.Errorf("max_file_size %s: expected %d, got %d", in, want, got)
		}
	}
	for _, in := range []string{"0", "1000", "5GiB", "16MB", "-1KiB", "big", ""} {
		c := caddy.NewTestController("dns", block("max_file_size "+in))
		dnsserver.GetConfig(c).Root = dir
		if g, err := parse(c); err == nil {
			g.stop()
			t.Errorf("max_file_size %q: expected an error", in)
		}
	}
	big := filepath.Join(dir, "big.yaml")
	data := fixtureNodes + "# " + strings.Repeat("x", 2048) + "\n"
	if err := os.WriteFile(big, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c := caddy.NewTestController("dns", "gslb example.org {\ngeoip city.mmdb\nnodes big.yaml\nmax_file_size 2KiB\n}")
	dnsserver.GetConfig(c).Root = dir
	g, err := parse(c)
	want := fmt.Sprintf("%s: %d bytes, over the size limit of 2048 bytes (max_file_size)", big, len(data))
	if err == nil {
		g.stop()
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Expected %q, got %v", want, err)
	}
}
