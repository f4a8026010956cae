package geo

import (
	"encoding/binary"
	"net/netip"
)

type special4 struct {
	base, mask uint32
	bits       uint8
}

type special6 struct {
	hi, lo         uint64 // network
	maskHi, maskLo uint64
	bits           uint8
}

// Ranges that never go to geo lookup (RFC 6890 and friends).
var (
	specials4 = mustSpecials4(
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	)
	// 2001::/23 ends at 2001:1ff:..., so 2001:da8::/32 (CERNET) stays outside.
	specials6 = mustSpecials6(
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "2001:db8::/32", "ff00::/8",
		"100::/64", "2001::/23", "3fff::/20",
	)
)

func mustSpecials4(ps ...string) []special4 {
	out := make([]special4, len(ps))
	for i, s := range ps {
		p := netip.MustParsePrefix(s)
		a := p.Addr().As4()
		out[i] = special4{base: binary.BigEndian.Uint32(a[:]), mask: ^uint32(0) << (32 - p.Bits()), bits: uint8(p.Bits())}
	}
	return out
}

func mustSpecials6(ps ...string) []special6 {
	out := make([]special6, len(ps))
	for i, s := range ps {
		p := netip.MustParsePrefix(s)
		a := p.Addr().As16()
		r := special6{hi: binary.BigEndian.Uint64(a[:8]), lo: binary.BigEndian.Uint64(a[8:]), bits: uint8(p.Bits())}
		switch b := p.Bits(); {
		case b == 0:
		case b <= 64:
			r.maskHi = ^uint64(0) << (64 - b)
		default:
			r.maskHi = ^uint64(0)
			r.maskLo = ^uint64(0) << (128 - b)
		}
		out[i] = r
	}
	return out
}

// Special reports whether addr is in a range that never goes to geo lookup,
// and that range's length. IPv4-mapped IPv6 addresses are unmapped first, so
// bits is then an IPv4 length. An invalid address is special with bits 0.
func Special(addr netip.Addr) (bits int, ok bool) {
	if !addr.IsValid() {
		return 0, true
	}
	addr = addr.Unmap()
	if addr.Is4() {
		a := addr.As4()
		v := binary.BigEndian.Uint32(a[:])
		for i := range specials4 {
			if v&specials4[i].mask == specials4[i].base {
				return int(specials4[i].bits), true
			}
		}
		return 0, false
	}
	a := addr.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	for i := range specials6 {
		s := &specials6[i]
		if hi&s.maskHi == s.hi && lo&s.maskLo == s.lo {
			return int(s.bits), true
		}
	}
	return 0, false
}
