package engine

import (
	"net/netip"
	"strings"
	"testing"
)

func TestRangeCIDRs(t *testing.T) {
	tests := []struct{ first, last, want string }{
		{"1.0.2.0", "1.0.3.255", "1.0.2.0/23"},
		{"1.0.1.0", "1.0.3.255", "1.0.1.0/24 1.0.2.0/23"},
		{"1.0.4.7", "1.0.4.7", "1.0.4.7/32"},
		{"0.0.0.0", "255.255.255.255", "0.0.0.0/0"},
		{"2001:db8::", "2001:db8:0:ffff:ffff:ffff:ffff:ffff", "2001:db8::/48"},
	}
	for _, tc := range tests {
		got := strings.Join(rangeCIDRs(netip.MustParseAddr(tc.first), netip.MustParseAddr(tc.last)), " ")
		if got != tc.want {
			t.Errorf("rangeCIDRs(%s, %s) = %s, want %s", tc.first, tc.last, got, tc.want)
		}
	}
}

func TestOdd(t *testing.T) {
	tests := []struct {
		says map[string]AuditSource
		want string
	}{
		{map[string]AuditSource{"geoip": {"GD", ""}, "ip2region": {"GD", "telecom"}, "ipdb": {"ZJ", "telecom"}}, "ipdb"},
		{map[string]AuditSource{"geoip": {"GD", ""}, "ipdb": {"ZJ", "telecom"}}, ""}, // no majority of two
		{map[string]AuditSource{"geoip": {"GD", ""}, "ip2region": {"SH", ""}, "ipdb": {"ZJ", ""}}, ""},
		{map[string]AuditSource{"ipdb": {"ZJ", "telecom"}, "ip2region": {"ZJ", "telecom"}, "list": {"", "unicom"}}, "list"},
	}
	for _, tc := range tests {
		if got := odd(tc.says); got != tc.want {
			t.Errorf("odd(%v) = %q, want %q", tc.says, got, tc.want)
		}
	}
}
