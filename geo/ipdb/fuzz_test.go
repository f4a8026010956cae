package ipdb

import (
	"net/netip"
	"testing"
)

var fuzzAddrs = []netip.Addr{
	netip.MustParseAddr("0.0.0.0"),
	netip.MustParseAddr("202.101.172.35"),
	netip.MustParseAddr("255.255.255.255"),
	netip.MustParseAddr("::"),
	netip.MustParseAddr("::ffff:8.8.8.8"),
	netip.MustParseAddr("2001:da8:8000::1"),
	netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
}

// FuzzFromBytes: whatever the bytes, FromBytes and lookups must not panic
// or hang, and what lookups return must be consistent.
func FuzzFromBytes(f *testing.F) {
	f.Add(buildDB(f, testMeta, testRecs))
	f.Add(buildDB(f, testMeta, testRecs[:4]))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := FromBytes("fuzz.ipdb", b)
		if err != nil {
			return
		}
		fields := r.Meta().Fields
		for _, lang := range r.Languages() {
			rl, err := r.WithLanguage(lang)
			if err != nil {
				t.Fatalf("WithLanguage(%q) of a listed language: %v", lang, err)
			}
			for _, a := range fuzzAddrs {
				rec, bits, ok := rl.Lookup(a)
				if width := a.Unmap().BitLen(); bits < 0 || bits > width || !ok && bits != 0 {
					t.Fatalf("Lookup(%s) = bits %d, ok %v", a, bits, ok)
				}
				_ = rec.CountryName() + rec.RegionName() + rec.CityName() + rec.ISPDomain() + rec.Latitude()
				for _, f := range fields {
					_ = rec.Field(f)
				}
			}
		}
	})
}
