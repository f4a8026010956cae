package locate

import (
	"net/netip"
	"testing"
)

func TestKeyUnit(t *testing.T) {
	for _, tc := range []struct {
		addr string
		bits uint8
		want string
	}{
		{"36.1.200.9", 20, "36.1.192.0/24"},
		{"36.1.200.9", 16, "36.1.0.0/24"},
		{"36.1.200.9", 24, "36.1.200.0/24"},
		{"36.1.200.9", 30, "36.1.200.0/24"},
		{"36.1.200.9", 0, "0.0.0.0/24"},
		{"2408:8000:1234:5678::1", 40, "2408:8000:1200::/48"},
		{"2408:8000:1234:5678::1", 64, "2408:8000:1234::/48"},
	} {
		k := KeyOf(netip.MustParseAddr(tc.addr)).Unit(tc.bits)
		if got := k.Prefix().String(); got != tc.want || k.Is4() != netip.MustParseAddr(tc.addr).Is4() {
			t.Errorf("%s /%d: %s, want %s", tc.addr, tc.bits, got, tc.want)
		}
	}
}

// The unit is the client's network, cut to its place's unit but no finer
// than the spread prefix, never finer than the key: every /24 of a /20
// network shares one unit, and a /16 network of a small place hashes per
// /20.
func TestSpreadUnit(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		scope  uint8
		want   string
		bits   uint8
		spread uint8 // the place's unit, geo.Location.SpreadBits
	}{
		{"36.1.200.9", 20, "36.1.192.0/24", 20, 0},
		{"36.1.200.9", 16, "36.1.192.0/24", 20, 0}, // wider than spread_prefix: per /20
		{"36.1.200.9", 22, "36.1.200.0/24", 22, 0}, // an override or a narrower network
		{"36.1.200.9", 24, "36.1.200.0/24", 24, 0}, // refined per /24
		{"36.1.200.9", 28, "36.1.200.0/24", 24, 0},
		{"2408:8000:1234::1", 32, "2408:8000:1200::/48", 40, 0},
		// A place of networks enough: hashed whole, or cut only to its unit.
		{"36.1.200.9", 16, "36.1.0.0/24", 16, 1},
		{"36.1.200.9", 14, "36.1.0.0/24", 16, 16},
		{"36.1.200.9", 14, "36.1.192.0/24", 20, 22}, // never finer than spread_prefix
		{"36.1.200.9", 23, "36.1.200.0/24", 23, 1},  // never wider than the network
		{"2408:8000:1234::1", 32, "2408:8000:1200::/48", 40, 1},
	} {
		a := netip.MustParseAddr(tc.addr)
		r := Result{Key: KeyOf(a), Scope: tc.scope}
		r.SpreadBits = tc.spread
		k, bits := r.SpreadUnit(DefaultSpreadPrefix4, DefaultSpreadPrefix6)
		if k.Prefix().String() != tc.want || bits != tc.bits {
			t.Errorf("%s scope %d: %s /%d, want %s /%d", tc.addr, tc.scope, k.Prefix(), bits, tc.want, tc.bits)
		}
	}
	seen := map[Key]bool{}
	for i := range 16 {
		r := Result{Key: KeyOf(netip.AddrFrom4([4]byte{36, 1, byte(192 + i), 1})), Scope: 20}
		k, _ := r.SpreadUnit(DefaultSpreadPrefix4, DefaultSpreadPrefix6)
		seen[k] = true
	}
	if len(seen) != 1 {
		t.Errorf("The 16 /24s of a /20 have %d units, want 1", len(seen))
	}
}
