package ip2region_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
)

var fuzzAddrs = []netip.Addr{
	netip.MustParseAddr("0.0.0.0"),
	netip.MustParseAddr("1.0.0.1"),
	netip.MustParseAddr("36.110.0.3"),
	netip.MustParseAddr("113.65.1.1"),
	netip.MustParseAddr("202.101.172.35"),
	netip.MustParseAddr("255.255.255.255"),
	netip.MustParseAddr("::"),
	netip.MustParseAddr("240e:388::1"),
	netip.MustParseAddr("2001:da8:8000::1"),
	netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
}

// mutate reads b as edits of a valid file, since a whole file (over 512
// KiB of vector index) is too large for the fuzzer to work with: b[0]
// picks the IPv4 or the IPv6 base, then each 4 bytes are a 3-byte
// big-endian offset (modulo the file's size) and the byte to put there; a
// trailing 1..3 bytes cut the file to that many bytes fewer.
func mutate(t testing.TB, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	base := v4(t)
	if b[0]&1 == 1 {
		base = v6(t)
	}
	b = b[1:]
	for ; len(b) >= 4; b = b[4:] {
		off := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		base[off%len(base)] = b[3]
	}
	return base[:len(base)-len(b)]
}

// FuzzFromBytes: whatever the bytes, FromBytes and lookups must not panic
// or hang, and what lookups return must be consistent.
func FuzzFromBytes(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{0, 0, 0, 16, 5})            // ip version
	f.Add([]byte{0, 0x08, 0x00, 0x0a, 0x01}) // a vector cell
	f.Add(binary.BigEndian.AppendUint32([]byte{1}, 0x080100ff))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, file := range [][]byte{b, mutate(t, b)} {
			r, err := ip2region.FromBytes("fuzz.xdb", file)
			if err != nil {
				continue
			}
			for _, a := range fuzzAddrs {
				rec, bits, ok := r.Lookup(a)
				if width := a.BitLen(); bits < 0 || bits > width || !ok && bits != 0 {
					t.Fatalf("Lookup(%s) = bits %d, ok %v", a, bits, ok)
				}
				if ok && rec.Raw == "" {
					t.Fatalf("Lookup(%s) found an empty region", a)
				}
			}
		}
	})
}
