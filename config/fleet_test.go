package config

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseFleet(t *testing.T) {
	const redis = "redis 127.0.0.1:6379\n"
	tests := []struct {
		name, block string
		wantErr     string
		want        Fleet
	}{
		{"full", redis + "fleet cdn {\n vantage Telecom ZJ\n probe_source 127.0.0.2\n quorum 0.6\n probers 2\n member ns1\n}",
			"", Fleet{Name: "cdn", Member: "ns1", Carrier: "telecom", Province: "ZJ", ProbeSource: netip.MustParseAddr("127.0.0.2"), Quorum: 0.6, Probers: 2}},
		{"least", redis + "fleet cdn {\n vantage unicom\n}", "", Fleet{Name: "cdn", Carrier: "unicom"}},
		{"no redis", "fleet cdn {\n vantage unicom\n}", "a redis block is required", Fleet{}},
		{"no name", redis + "fleet", "fleet: NAME is required", Fleet{}},
		{"braces", redis + "fleet a{b} {\n vantage unicom\n}", "without braces", Fleet{}},
		{"no vantage", redis + "fleet cdn {\n quorum 0.5\n}", "vantage CARRIER is required", Fleet{}},
		{"vantage args", redis + "fleet cdn {\n vantage a b c\n}", "vantage CARRIER [PROVINCE]", Fleet{}},
		{"bad source", redis + "fleet cdn {\n vantage unicom\n probe_source nope\n}", `probe_source: "nope" is not an IP address`, Fleet{}},
		{"bad quorum", redis + "fleet cdn {\n vantage unicom\n quorum 1.5\n}", "quorum", Fleet{}},
		{"zero quorum", redis + "fleet cdn {\n vantage unicom\n quorum 0\n}", "quorum", Fleet{}},
		{"bad probers", redis + "fleet cdn {\n vantage unicom\n probers 0\n}", "probers", Fleet{}},
		{"unknown", redis + "fleet cdn {\n vantage unicom\n voters 3\n}", `fleet: unknown property "voters"`, Fleet{}},
		{"extra arg", redis + "fleet cdn {\n vantage unicom\n quorum 0.5 0.6\n}", `unexpected argument "0.6"`, Fleet{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Testfile:") {
					t.Fatalf("Expected an error naming the file with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			got := *o.Fleet
			got.Line = 0
			if got != tc.want {
				t.Errorf("Expected %+v, got %+v", tc.want, got)
			}
		})
	}
}
