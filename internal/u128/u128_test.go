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

// TestBlockBits: the block of an address within a range, IPv4 (held in
// the low 32 bits, start 96) at both ends of its space and IPv6.
func TestBlockBits(t *testing.T) {
	v4 := func(s string) U128 { return FromAddr(netip.AddrFrom16(netip.MustParseAddr(s).As16())) }
	v4low := func(s string) U128 {
		b := netip.MustParseAddr(s).As4()
		return U128{Lo: uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	for _, tc := range []struct {
		a, lo, hi U128
		start     int
		want      int
	}{
		{v4low("1.0.1.7"), v4low("1.0.1.0"), v4low("1.0.1.255"), 96, 96 + 24},
		{v4low("255.255.255.9"), v4low("255.255.255.0"), v4low("255.255.255.255"), 96, 96 + 24},
		{v4low("0.0.0.9"), v4low("0.0.0.0"), v4low("255.255.255.255"), 96, 96},
		{v4low("10.1.2.3"), v4low("10.0.0.0"), v4low("10.1.255.255"), 96, 96 + 15},
		{v4("2400::1"), v4("2400::"), v4("2400::ffff:ffff:ffff:ffff"), 0, 64},
		{v4("::1"), U128{}, Max, 0, 0},
	} {
		if got := BlockBits(tc.a, tc.lo, tc.hi, tc.start); got != tc.want {
			t.Errorf("BlockBits(%v, %v, %v, %d) = %d, want %d", tc.a, tc.lo, tc.hi, tc.start, got, tc.want)
		}
	}
}
