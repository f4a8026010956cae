package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy/caddyfile"
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
