package config

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/locate"
)

// parseBlock parses one Corefile block the way setup does.
func parseBlock(block string) (*Options, error) {
	d := caddyfile.NewDispenser("Testfile", strings.NewReader(block))
	return Parse(&d, nil, "", Unique{})
}

func TestParseCanaryOptions(t *testing.T) {
	tests := []struct {
		name, block string
		wantErr     string
	}{
		{"defaults", "canary c.yaml 5", ""},
		{"salt and window", "canary c.yaml 5 {\n salt 0123456789abcdef\n rollback_window 10s\n}", ""},
		{"short salt", "canary c.yaml 5 {\n salt short\n}", "salt must be a secret of at least 16"},
		{"empty salt", "canary c.yaml 5 {\n salt \"\"\n}", "got 0 (an unset environment variable?)"},
		{"no salt", "canary c.yaml 5 {\n salt\n}", "Wrong argument count"},
		{"short window", "canary c.yaml 5 {\n rollback_window 100ms\n}", "rollback_window"},
		{"trust_ecs", "trust_ecs 192.0.2.0/24 198.51.100.7 2001:db8::/32", ""},
		{"trust_ecs empty", "trust_ecs", "Wrong argument count"},
		{"trust_ecs junk", "trust_ecs 192.0.2.0/33", `trust_ecs: "192.0.2.0/33" is not a CIDR`},
		{"trust_ecs mapped", "trust_ecs ::ffff:192.0.2.0/120", "IPv4-mapped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			if cn := g.Canary; cn != nil {
				want := DefaultRollbackWindow
				if strings.Contains(tc.block, "10s") {
					want = 10 * time.Second
				}
				if cn.Window != want {
					t.Errorf("Expected rollback_window %s, got %s", want, cn.Window)
				}
			}
			if tc.name == "trust_ecs" {
				want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("2001:db8::/32")}
				if len(g.TrustECS) != len(want) {
					t.Fatalf("Expected %v, got %v", want, g.TrustECS)
				}
				for i := range want {
					if g.TrustECS[i] != want[i] {
						t.Errorf("Expected %v, got %v", want, g.TrustECS)
					}
				}
			}
		})
	}
}

// TestSetupSOA parses the soa option: its fields, defaults and errors.
func TestSetupSOA(t *testing.T) {
	base := "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\n"
	tests := []struct {
		name    string
		input   string
		want    SOA
		wantErr string
	}{
		{"default", base + "}", SOA{Refresh: 14400, Retry: 3600, Expire: 1209600, Minimum: 300}, ""},
		{"every field", base + `soa {
  serial 2026120101
  refresh 20000
  retry 4000
  expire 700000
  minimum 600
  mname NS.Example.net
  rname ops.example.net.
}
}`, SOA{Serial: 2026120101, Refresh: 20000, Retry: 4000, Expire: 700000, Minimum: 600,
			MName: "ns.example.net.", RName: "ops.example.net."}, ""},
		{"one field", base + "soa {\nminimum 900\n}\n}", SOA{Refresh: 14400, Retry: 3600, Expire: 1209600, Minimum: 900}, ""},
		{"unknown", base + "soa {\ncolour blue\n}\n}", SOA{}, `soa: unknown property "colour"`},
		{"not a number", base + "soa {\nrefresh 4h\n}\n}", SOA{}, `refresh: "4h" is not a whole number`},
		{"zero", base + "soa {\nminimum 0\n}\n}", SOA{}, "minimum"},
		{"extra argument", base + "soa {\nretry 3600 7200\n}\n}", SOA{}, `soa: unexpected argument "7200"`},
		{"retry not below refresh", base + "soa {\nretry 14400\n}\n}", SOA{}, "retry 14400 must be below refresh 14400"},
		{"expire below refresh", base + "soa {\nexpire 7200\n}\n}", SOA{}, "expire 7200 must not be below refresh 14400"},
		{"mailbox with @", base + "soa {\nrname ops@example.net\n}\n}", SOA{}, "not a domain name"},
		{"no name", base + "soa {\nmname\n}\n}", SOA{}, "Wrong argument count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := caddyfile.NewDispenser("Testfile", strings.NewReader(tc.input))
			g, err := Parse(&d, []string{"example.org:53"}, "", Unique{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Expected no error, got %v", err)
			}
			if g.SOA != tc.want {
				t.Errorf("soa %+v, want %+v", g.SOA, tc.want)
			}
		})
	}
}

func TestParseSteeringOptions(t *testing.T) {
	tests := []struct {
		name, block string
		check       func(*Options) bool
		wantErr     string
	}{
		{"defaults", "", func(o *Options) bool {
			return o.TTL == DefaultTTL && o.MinTTL == 0 && o.Params.Ladder == nil && o.Params.Ladder6 == nil &&
				o.SpreadPrefix4 == 20 && o.SpreadPrefix6 == 40 && o.Params.Weights[4] == 0
		}, ""},
		{"ttl max", "ttl 300", func(o *Options) bool { return o.TTL == 300 && o.MinTTL == 0 }, ""},
		{"ttl max min", "ttl 300 20", func(o *Options) bool { return o.TTL == 300 && o.MinTTL == 20 }, ""},
		{"ttl min above max", "ttl 30 60", nil, `ttl: MIN "60" is not a whole number in 1..30`},
		{"ttl three", "ttl 30 20 10", nil, "ttl: needs MAX [MIN]"},
		{"ttl zero", "ttl 0", nil, `ttl: MAX "0"`},
		{"ladder", "ladder province_isp neighbor_isp province neighbor region country continent all", func(o *Options) bool {
			return o.Params.Ladder.String() == "province_isp neighbor_isp province neighbor region country continent all" && o.Params.Ladder6 == nil
		}, ""},
		{"ladder6", "ladder6 province_isp neighbor_isp province all", func(o *Options) bool {
			return o.Params.Ladder == nil && o.Params.Ladder6.String() == "province_isp neighbor_isp province all"
		}, ""},
		{"ladder unknown", "ladder province_isp city all", nil, `Testfile:4 - Error during parsing: ladder: unknown tier "city"`},
		{"ladder twice", "ladder6 province province all", nil, `ladder6: tier "province" listed twice`},
		{"ladder all first", "ladder all province", nil, `ladder: tier "all" must be last`},
		{"ladder empty", "ladder", nil, "ladder: no tier"},
		{"spread_prefix", "spread_prefix 22 44", func(o *Options) bool { return o.SpreadPrefix4 == 22 && o.SpreadPrefix6 == 44 }, ""},
		{"spread_prefix v4", "spread_prefix 16", func(o *Options) bool { return o.SpreadPrefix4 == 16 && o.SpreadPrefix6 == 40 }, ""},
		{"spread_prefix wide", "spread_prefix 25", nil, `spread_prefix: V4 "25" is not a whole number in 8..24`},
		{"spread_prefix v6", "spread_prefix 20 49", nil, `spread_prefix: V6 "49"`},
		{"weights five", "weights 0.5 0.2 0.1 0.1 0.1", func(o *Options) bool { return o.Params.Weights[4] == 0.1 && o.Params.Weights[3] == 0.1 }, ""},
		{"weights six", "weights 0.4 0.2 0.1 0.2 0.05 0.05", func(o *Options) bool { return o.Params.Weights[5] == 0.05 }, ""},
		{"weights seven", "weights 1 1 1 1 1 1 1", nil, `unexpected argument "1"`},
		{"max_error_rate", "max_error_rate 0.1", func(o *Options) bool { return o.Params.MaxErrorRate == 0.1 }, ""},
		{"max_error_rate bad", "max_error_rate 1.5", nil, `max_error_rate: "1.5" is not a number in 0..1`},
		{"precompute default", "", func(o *Options) bool {
			return o.Precompute != nil && *o.Precompute == locate.PrecomputeConfig{}
		}, ""},
		{"precompute off", "precompute off", func(o *Options) bool { return o.Precompute.Off }, ""},
		{"precompute size", "precompute 16MiB", func(o *Options) bool { return o.Precompute.MaxBytes == 16<<20 && o.Precompute.MaxTime == 0 }, ""},
		{"precompute size time", "precompute 1GiB 2m", func(o *Options) bool {
			return o.Precompute.MaxBytes == 1<<30 && o.Precompute.MaxTime == 2*time.Minute
		}, ""},
		{"precompute bad size", "precompute 16MB", nil, `Testfile:4 - Error during parsing: precompute: "16MB" is not a size in 1KiB..4GiB`},
		{"precompute bad time", "precompute 16MiB 10ms", nil, `precompute: "10ms" is not a duration of at least 1s`},
		{"precompute none", "precompute", nil, "precompute: want off, or a size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			if !tc.check(o) {
				t.Errorf("Unexpected options for %q: ttl %d/%d ladder %v ladder6 %v spread_prefix %d %d weights %v",
					tc.block, o.TTL, o.MinTTL, o.Params.Ladder, o.Params.Ladder6, o.SpreadPrefix4, o.SpreadPrefix6, o.Params.Weights)
			}
		})
	}
}

func TestParseDNSSEC(t *testing.T) {
	tests := []struct {
		block, wantErr string
		keys, publish  int
	}{
		{"dnssec Kexample.org.+013+1", "", 1, 0},
		{"dnssec /k/A /k/B publish /k/C", "", 2, 1},
		{"dnssec", "no key file signs", 0, 0},
		{"dnssec publish K", "no key file signs", 0, 0},
		{"dnssec K publish", "publish without a key file", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.block, func(t *testing.T) {
			g, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Testfile:4") {
					t.Fatalf("Expected an error at Testfile:4 with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.DNSSEC == nil || len(g.DNSSEC.Keys) != tc.keys || len(g.DNSSEC.Publish) != tc.publish {
				t.Fatalf("DNSSEC %+v, want %d keys, %d published", g.DNSSEC, tc.keys, tc.publish)
			}
		})
	}
}

// TestRedisUsername: the redis block's ACL user reaches the client's config.
func TestRedisUsername(t *testing.T) {
	o, err := parseBlock(blockOf("redis", "username gslb-cdn-prod\npassword s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Redis == nil || o.Redis.Username != "gslb-cdn-prod" || o.Redis.Password != "s3cret" {
		t.Errorf("Got %+v, want username gslb-cdn-prod and its password", o.Redis)
	}
}

// TestParseCanaryPlan: the autopilot's plan, its defaults and its errors.
func TestParseCanaryPlan(t *testing.T) {
	const feedBlock = "feed {\nsource s {\ntoken_file t\nnodes *\n}\n}\nadmin 127.0.0.1:9154\n"
	o, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + feedBlock + "canary c.yaml {\nsteps 1 5 20\ndwell 10m\nguard ttfb_p50 +10%\nguard error_rate +0.2\nguard hit_rate -1\nguard cross +0.02\nmin_samples 5000\nsource_share 0.4\n}\n}")
	if err != nil {
		t.Fatal(err)
	}
	p := o.Canary.Plan
	want := []Guard{{GuardTTFBP50, 0.1}, {GuardErrorRate, 0.002}, {GuardHitRate, 0.01}, {GuardCross, 0.02}}
	if p == nil || len(p.Steps) != 3 || p.Dwell != 10*time.Minute || p.MinSamples != 5000 || p.SourceShare != 0.4 || o.Canary.Percent != 1 || len(p.Guards) != len(want) {
		t.Fatalf("Unexpected plan %+v", p)
	}
	for i := range want {
		if g := p.Guards[i]; g.Metric != want[i].Metric || math.Abs(g.Delta-want[i].Delta) > 1e-12 {
			t.Errorf("Guard %d: %+v, want %+v", i, g, want[i])
		}
	}
	o, err = parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + feedBlock + "canary c.yaml {\ndwell 5m\n}\n}")
	if err != nil || len(o.Canary.Plan.Steps) != 5 || len(o.Canary.Plan.Guards) != 5 {
		t.Fatalf("Expected the default steps and guards, got %+v, %v", o, err)
	}
	for _, tc := range []struct{ block, want string }{
		{feedBlock + "canary c.yaml 5 {\nsteps 1 5\n}", "PERCENT and a plan"},
		{"canary c.yaml {\nsteps 1 5\n}", "needs a feed block"},
		{feedBlock + "canary c.yaml", "PERCENT is required"},
		{feedBlock + "canary c.yaml {\nsteps 5 1\n}", `steps: 1 does not rise above 5`},
		{feedBlock + "canary c.yaml {\nsteps 0 5\n}", `steps: "0" is not a percent`},
		{feedBlock + "canary c.yaml {\nguard ttfb_p50 10%\n}", `guard ttfb_p50: "10%" is not +N%`},
		{feedBlock + "canary c.yaml {\nguard hit_rate +1\n}", `guard hit_rate: "+1" is not -N`},
		{feedBlock + "canary c.yaml {\nguard ttfb_p59 +1%\n}", `not one of ttfb_p50`},
		{feedBlock + "canary c.yaml {\nguard cross +0.02\nguard cross +0.03\n}", `guard cross: given twice`},
	} {
		_, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %s", tc.block, err, tc.want)
		}
	}
}
