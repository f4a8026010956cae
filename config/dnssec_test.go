package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/sign"
)

func TestParseDNSSECDenial(t *testing.T) {
	tests := []struct {
		name, line string
		want       sign.Config
		wantErr    string
	}{
		{"keys alone", "dnssec K1", sign.Config{Keys: []string{"K1"}}, ""},
		{"nsec", "dnssec K1 publish K2 {\n denial nsec\n}", sign.Config{Keys: []string{"K1"}, Publish: []string{"K2"}, Denial: sign.DenialNSEC}, ""},
		{"nsec3 defaults", "dnssec K1 {\n denial nsec3\n}", sign.Config{Keys: []string{"K1"}, Denial: sign.DenialNSEC3}, ""},
		{"nsec3 params", "dnssec K1 {\n denial nsec3 5 aabb\n}", sign.Config{Keys: []string{"K1"}, Denial: sign.DenialNSEC3, NSEC3Iterations: 5, NSEC3Salt: "aabb"}, ""},
		{"nsec3 no salt", "dnssec K1 {\n denial nsec3 0 -\n}", sign.Config{Keys: []string{"K1"}, Denial: sign.DenialNSEC3}, ""},
		{"black lies", "dnssec K1 {\n denial black_lies\n}", sign.Config{Keys: []string{"K1"}, Denial: sign.DenialBlackLies}, ""},
		{"too many iterations", "dnssec K1 {\n denial nsec3 101\n}", sign.Config{}, "iterations \"101\""},
		{"bad salt", "dnssec K1 {\n denial nsec3 0 xyz\n}", sign.Config{}, "salt \"xyz\""},
		{"nsec with iterations", "dnssec K1 {\n denial nsec 0\n}", sign.Config{}, "iterations and salt are nsec3's"},
		{"unknown denial", "dnssec K1 {\n denial nsec5\n}", sign.Config{}, "want nsec, nsec3 or black_lies"},
		{"unknown property", "dnssec K1 {\n signatures 3\n}", sign.Config{}, "unknown property \"signatures\""},
		{"no keys", "dnssec {\n denial nsec\n}", sign.Config{}, "no key file signs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := parseOption(t, tc.line, tc.wantErr)
			if o == nil {
				return
			}
			if !reflect.DeepEqual(*o.DNSSEC, tc.want) {
				t.Errorf("Got %+v, want %+v", *o.DNSSEC, tc.want)
			}
		})
	}
}

func TestParseRRL(t *testing.T) {
	def := rrl.Defaults()
	tests := []struct {
		name, line string
		want       func(*rrl.Config)
		wantErr    string
	}{
		{"absent: on with the defaults", "", func(*rrl.Config) {}, ""},
		{"off", "rrl off", func(c *rrl.Config) { c.Off = true }, ""},
		{"block", "rrl {\n answers 10\n denials 5\n errors 0\n window 30s\n slip 3\n prefix 22 48\n exempt 192.0.2.0/24 2001:db8::/32\n log_only\n}", func(c *rrl.Config) {
			c.Rates = [rrl.Kinds]uint32{10, 5, 0}
			c.Window, c.Slip, c.Prefix4, c.Prefix6, c.LogOnly = 30*time.Second, 3, 22, 48, true
			c.Exempt = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}
		}, ""},
		{"exempt none", "rrl {\n exempt none\n}", func(c *rrl.Config) { c.Exempt = nil }, ""},
		{"rate too high", "rrl {\n answers 2000000\n}", nil, "answers: \"2000000\""},
		{"short window", "rrl {\n window 100ms\n}", nil, "window"},
		{"long window", "rrl {\n window 2h\n}", nil, "longer than 1h0m0s"},
		{"bad prefix", "rrl {\n prefix 24 96\n}", nil, "prefix: V6 \"96\""},
		{"bad exempt", "rrl {\n exempt 10.0.0.1/8\n}", nil, "bits set after the prefix"},
		{"unknown", "rrl {\n burst 5\n}", nil, "rrl: unknown property \"burst\""},
		{"junk", "rrl on", nil, "want off or a block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := parseOption(t, tc.line, tc.wantErr)
			if o == nil {
				return
			}
			want := def
			tc.want(&want)
			if !reflect.DeepEqual(o.RRL, want) {
				t.Errorf("Got %+v, want %+v", o.RRL, want)
			}
		})
	}
}

// parseOption parses a gslb block with line and checks its error: nil when
// the error was wanted and found.
func parseOption(t *testing.T, line, wantErr string) *Options {
	t.Helper()
	o, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + line + "\n}")
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Expected an error with %q, got %v", wantErr, err)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("Unexpected error: %v", err)
	}
	return o
}
