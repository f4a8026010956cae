package locate

import (
	"encoding/binary"
	"net/netip"
)

// Key is a client's /24 (IPv4) or /48 (IPv6): the unit the plugin caches
// locations for, asks the online API and Redis about, and spreads clients
// by. An IPv4-mapped address has the key of its IPv4 address.
type Key uint64

// KeyBits4 and KeyBits6 are the key's prefix lengths.
const (
	KeyBits4 = 24
	KeyBits6 = 48
)

// KeyOf returns addr's key.
func KeyOf(addr netip.Addr) Key {
	addr = addr.Unmap()
	if addr.Is4() {
		a := addr.As4()
		return Key(uint64(binary.BigEndian.Uint32(a[:])&0xffffff00) | 4<<32)
	}
	a := addr.As16()
	return Key(binary.BigEndian.Uint64(a[:8])&^0xffff | 6)
}

// Is4 reports whether k is an IPv4 /24.
func (k Key) Is4() bool { return k&0xffff != 6 }

// Bits is the key's prefix length: 24 or 48.
func (k Key) Bits() uint8 {
	if k.Is4() {
		return KeyBits4
	}
	return KeyBits6
}

// Prefix is the network the key stands for.
func (k Key) Prefix() netip.Prefix {
	if k.Is4() {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], uint32(k))
		return netip.PrefixFrom(netip.AddrFrom4(a), KeyBits4)
	}
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], uint64(k)&^0xffff)
	return netip.PrefixFrom(netip.AddrFrom16(a), KeyBits6)
}

// Unit is the key of the network of bits (at most the key's own length)
// that contains k: the unit the spread hashes a client on when it is
// wider than a /24 (/48).
func (k Key) Unit(bits uint8) Key {
	if k.Is4() {
		bits = min(bits, KeyBits4)
		return k &^ Key(uint64(1)<<(32-bits)-1)
	}
	bits = min(bits, KeyBits6)
	return k&^Key(uint64(1)<<(64-bits)-1) | 6
}

// DefaultSpreadPrefix4 and DefaultSpreadPrefix6 are spread_prefix's
// defaults: the finest unit the spread cuts a client's network to when it
// is wider.
const (
	DefaultSpreadPrefix4 = 20
	DefaultSpreadPrefix6 = 40
)

// SpreadUnit is the unit the spread hashes r's client on, and its length:
// the network that placed it (r.Scope, which already respects overrides
// and a per-/24 refinement by Redis or the online API), cut when wider
// to r.SpreadBits, the widest unit at which its place still balances
// (see geo.SpreadUnits), but never finer than spread4 (spread6) bits nor
// than the key. A network whose place no database weighed, and IPv6, is
// cut to spread4 (spread6).
func (r *Result) SpreadUnit(spread4, spread6 uint8) (Key, uint8) {
	cut := spread6
	if r.Key.Is4() {
		cut = spread4
		if r.SpreadBits != 0 {
			cut = min(cut, r.SpreadBits)
		}
	}
	bits := min(max(r.Scope, cut), r.Key.Bits())
	return r.Key.Unit(bits), bits
}
