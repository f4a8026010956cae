package ip2region_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

// bigV4 is a file the size of ip2region's own IPv4 data: 700,000 segments
// of 6,100 addresses over almost all the space, 3,000 distinct regions.
func bigV4(b *testing.B) []byte {
	b.Helper()
	recs := make([]ip2regiongen.Rec, 0, 700000)
	for i := range 700000 {
		var s, e [4]byte
		binary.BigEndian.PutUint32(s[:], uint32(i)*6100)
		binary.BigEndian.PutUint32(e[:], uint32(i)*6100+6099)
		recs = append(recs, ip2regiongen.Rec{Start: netip.AddrFrom4(s), End: netip.AddrFrom4(e),
			Region: fmt.Sprintf("中国|省%d|市%d|电信|CN", i%31, i%3000)})
	}
	return build(b, ip2regiongen.Meta{IPVersion: 4}, recs)
}

// BenchmarkFromBytes is the check at open of a full-size file.
func BenchmarkFromBytes(b *testing.B) {
	data := bigV4(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ip2region.FromBytes("big.xdb", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookupBig(b *testing.B) {
	r, err := ip2region.FromBytes("big.xdb", bigV4(b))
	if err != nil {
		b.Fatal(err)
	}
	a := netip.MustParseAddr("202.101.172.35")
	for b.Loop() {
		r.Lookup(a)
	}
}
