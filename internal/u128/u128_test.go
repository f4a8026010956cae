package u128

import (
	"net/netip"
	"testing"
)

func TestU128(t *testing.T) {
	tests := []struct {
		addr       string
		next, prev string
	}{
		{"::", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"::ffff:ffff:ffff:ffff", "0:0:0:1::", "::ffff:ffff:ffff:fffe"},
		{"1.2.3.4", "::ffff:1.2.3.5", "::ffff:1.2.3.3"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"},
	}
	for _, tc := range tests {
		a := FromAddr(netip.MustParseAddr(tc.addr))
		if got := netip.AddrFrom16(a.As16()); got != netip.AddrFrom16(netip.MustParseAddr(tc.addr).As16()) {
			t.Errorf("As16(%s) = %s", tc.addr, got)
		}
		if got := netip.AddrFrom16(a.Next().As16()); got != netip.MustParseAddr(tc.next) {
			t.Errorf("Next(%s) = %s, want %s", tc.addr, got, tc.next)
		}
		if got := netip.AddrFrom16(a.Prev().As16()); got != netip.MustParseAddr(tc.prev) {
			t.Errorf("Prev(%s) = %s, want %s", tc.addr, got, tc.prev)
		}
		if a != Max && !a.Less(a.Next()) || a.Less(a) {
			t.Errorf("Less(%s) is not a strict order around it", tc.addr)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"::", "::", 128}, {"::", "8000::", 0}, {"::", "::1", 127}, {"1::", "1::8000:0:0:0", 64}, {"10.0.0.0", "10.0.0.255", 120},
	} {
		if got := CommonBits(FromAddr(netip.MustParseAddr(tc.a)), FromAddr(netip.MustParseAddr(tc.b))); got != tc.want {
			t.Errorf("CommonBits(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
