package carrierlist_test

import (
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/carrierlist"
)

// FuzzParse: whatever the bytes, Parse and Build must not panic or hang,
// and lookups must agree with the longest matching prefix.
func FuzzParse(f *testing.F) {
	f.Add([]byte("# c\n1.0.0.0/8\n1.2.0.0/16 # x\n\n240e::/20\n::ffff:1.2.3.0/120\n"))
	f.Add([]byte("0.0.0.0/0\n::/0\n255.255.255.255/32\nffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := carrierlist.Parse("fuzz.txt", b)
		if err != nil {
			return
		}
		if len(ps) > 64 {
			ps = ps[:64]
		}
		// Even lines to one carrier, odd ones to another.
		var a, c []carrierlist.Prefix
		for i, p := range ps {
			if i%2 == 0 {
				a = append(a, p)
			} else {
				c = append(c, p)
			}
		}
		s, err := carrierlist.Build([]carrierlist.Source{
			{List: carrierlist.List{Name: "unicom", Carrier: "unicom"}, Prefixes: a},
			{List: carrierlist.List{Name: "chinanet", Carrier: "telecom"}, Prefixes: c},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			for _, addr := range []netip.Addr{p.Prefix.Addr(), p.Prefix.Addr().Prev(), lastOf(p.Prefix), lastOf(p.Prefix).Next()} {
				if !addr.IsValid() {
					continue
				}
				scan := func(addr netip.Addr) string {
					want, bits := "", -1
					for i, q := range ps {
						name := []string{"unicom", "chinanet"}[i%2]
						switch {
						case !q.Prefix.Contains(addr) || q.Prefix.Bits() < bits:
						case q.Prefix.Bits() == bits && want != name:
							want = "" // in both lists: no list answer
						case q.Prefix.Bits() > bits:
							want, bits = name, q.Prefix.Bits()
						}
					}
					return want
				}
				want := scan(addr)
				i, bits, ok := s.Lookup(addr)
				got := ""
				if ok {
					got = s.List(i).Name
				}
				if got != want {
					t.Fatalf("Lookup(%s) = %q, want %q", addr, got, want)
				}
				if bits < 0 || bits > addr.BitLen() {
					t.Fatalf("Lookup(%s) bits = %d", addr, bits)
				}
				// The block the answer holds for has it at both ends.
				blk := netip.PrefixFrom(addr.Unmap(), bits).Masked()
				edges := []netip.Addr{blk.Addr(), lastOf(blk)}
				for _, q := range ps {
					// A change of answer inside the block is at a prefix's edge.
					for _, e := range []netip.Addr{q.Prefix.Addr(), lastOf(q.Prefix).Next()} {
						if e.IsValid() && blk.Contains(e) {
							edges = append(edges, e)
						}
					}
				}
				for _, b := range edges {
					if scan(b) != want {
						t.Fatalf("Lookup(%s): block %s, but %s is %q, not %q", addr, blk, b, scan(b), want)
					}
				}
			}
		}
	})
}
