package geo_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo"
)

// TestCompareNetWalkIsCompareNet: a walk's remembered records give what
// decoding them gives, over every network of IPv4 (the demo databases and
// the test ones) and at random addresses between, revisited.
func TestCompareNetWalkIsCompareNet(t *testing.T) {
	demo, err := geo.Open("../demo/gslb-demo-City.mmdb", "../demo/gslb-demo-ASN.mmdb")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, db := range []*geo.DB{demo, openTestDB(t)} {
		w := geo.NewWalk()
		check := func(addr netip.Addr) uint8 {
			loc, other, n := db.CompareNetWalk(addr, w)
			wloc, wother, wn := db.CompareNet(addr)
			if loc != wloc || other != wother || n != wn {
				t.Fatalf("%s: walked %+v %+v /%d, want %+v %+v /%d", addr, loc, other, n, wloc, wother, wn)
			}
			return n
		}
		steps := 0
		for a := uint64(0); a < 1<<32 && steps < 1<<20; steps++ {
			var raw [4]byte
			binary.BigEndian.PutUint32(raw[:], uint32(a))
			addr := netip.AddrFrom4(raw)
			n := check(addr)
			if bits, ok := geo.Special(addr); ok {
				n = uint8(bits)
			} else if n > 32 {
				n = 24
			}
			a = a&^(1<<(32-n)-1) + 1<<(32-n)
		}
		if steps == 1<<20 || steps < 100 {
			t.Fatalf("Walk of %d steps", steps)
		}
		for range 20000 {
			var raw [4]byte
			binary.BigEndian.PutUint32(raw[:], r.Uint32())
			check(netip.AddrFrom4(raw))
		}
	}
}
