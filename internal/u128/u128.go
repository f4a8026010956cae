// Package u128 is an address as a 128-bit number, for the sorted range
// tables of the databases and the carrier lists: ranges compare, step and
// measure their common prefixes as two words, without a netip.Addr's
// zone and family.
package u128

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// U128 is an address as two big-endian halves.
type U128 struct{ Hi, Lo uint64 }

// Max is the last address.
var Max = U128{^uint64(0), ^uint64(0)}

// From16 reads a big-endian address.
func From16(b [16]byte) U128 {
	return U128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// FromAddr is a's 16 bytes: IPv4 comes out mapped into ::ffff:0:0/96.
func FromAddr(a netip.Addr) U128 { return From16(a.As16()) }

// As16 is a in big-endian bytes.
func (a U128) As16() (b [16]byte) {
	binary.BigEndian.PutUint64(b[:8], a.Hi)
	binary.BigEndian.PutUint64(b[8:], a.Lo)
	return b
}

func (a U128) Less(b U128) bool { return a.Hi < b.Hi || a.Hi == b.Hi && a.Lo < b.Lo }

// Next is a+1; Max's wraps to zero.
func (a U128) Next() U128 {
	if a.Lo == ^uint64(0) {
		return U128{a.Hi + 1, 0}
	}
	return U128{a.Hi, a.Lo + 1}
}

// Prev is a-1; zero's wraps to Max.
func (a U128) Prev() U128 {
	if a.Lo == 0 {
		return U128{a.Hi - 1, ^uint64(0)}
	}
	return U128{a.Hi, a.Lo - 1}
}

// CommonBits is the length of the common prefix of a and b.
func CommonBits(a, b U128) int {
	if x := a.Hi ^ b.Hi; x != 0 {
		return bits.LeadingZeros64(x)
	}
	return 64 + bits.LeadingZeros64(a.Lo^b.Lo)
}

// BlockBits is the shortest prefix length p >= start such that the
// aligned block of a at p lies within [lo, hi]: one bit longer than a's
// common prefix with lo-1 and with hi+1, the nearest addresses outside.
func BlockBits(a, lo, hi U128, start int) int {
	p := start
	if lo != (U128{}) {
		p = max(p, CommonBits(a, lo.Prev())+1)
	}
	if hi != Max {
		p = max(p, CommonBits(a, hi.Next())+1)
	}
	return min(p, 128)
}
