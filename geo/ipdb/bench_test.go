package ipdb

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdbgen"
)

var sink string

func TestLookupAllocs(t *testing.T) {
	r := openDB(t, buildDB(t, testMeta, testRecs))
	for _, s := range []string{"202.101.172.35", "::ffff:202.106.0.20", "2001:da8:8000::1", "1.1.1.1", "2400::1"} {
		a := netip.MustParseAddr(s)
		allocs := testing.AllocsPerRun(100, func() {
			rec, _, _ := r.Lookup(a)
			for _, v := range []string{rec.CountryName(), rec.RegionName(), rec.CityName(), rec.ISPDomain(), rec.Field("idd_code")} {
				sink = v
			}
		})
		if allocs != 0 {
			t.Errorf("Lookup(%s) allocates %v times, want 0", s, allocs)
		}
	}
}

// bigDB has about 50,000 networks, China-style /16s with /24s and /32s
// inside, and IPv6 /32s with /48s inside.
func bigDB(tb testing.TB) ([]byte, []netip.Addr) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := ipdbgen.Meta{Build: 1, Languages: []string{"CN"}, Fields: []string{"country_name", "region_name", "city_name", "owner_domain", "isp_domain", "country_code"}}
	regions := []string{"浙江", "北京", "广东", "上海", "四川"}
	isps := []string{"电信", "联通", "移动", "教育网"}
	seen := map[netip.Prefix]bool{}
	var recs []ipdbgen.Rec
	add := func(p netip.Prefix) {
		p = p.Masked()
		if seen[p] {
			return
		}
		seen[p] = true
		vals := []string{"中国", regions[rng.IntN(len(regions))], fmt.Sprint("城市", rng.IntN(300)), "", isps[rng.IntN(len(isps))], "CN"}
		recs = append(recs, ipdbgen.Rec{Network: p, Values: map[string][]string{"CN": vals}})
	}
	for range 2000 {
		a := netip.AddrFrom4([4]byte{byte(1 + rng.IntN(223)), byte(rng.IntN(256))})
		add(netip.PrefixFrom(a, 16))
		for range 20 {
			b := a.As4()
			b[2], b[3] = byte(rng.IntN(256)), byte(rng.IntN(256))
			add(netip.PrefixFrom(netip.AddrFrom4(b), 24+8*rng.IntN(2)))
		}
	}
	for range 1000 {
		a := [16]byte{0x24, byte(rng.IntN(16)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		add(netip.PrefixFrom(netip.AddrFrom16(a), 32))
		for range 5 {
			a[4], a[5] = byte(rng.IntN(256)), byte(rng.IntN(256))
			add(netip.PrefixFrom(netip.AddrFrom16(a), 48))
		}
	}
	b, err := ipdbgen.Build(m, recs)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		p := recs[rng.IntN(len(recs))].Network
		a := p.Addr().AsSlice()
		a[len(a)-1] ^= byte(rng.IntN(256))
		addrs[i], _ = netip.AddrFromSlice(a)
	}
	return b, addrs
}

func benchLookup(b *testing.B, want func(netip.Addr) bool) {
	data, addrs := bigDB(b)
	r := openDB(b, data)
	addrs = filter(addrs, want)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rec, _, _ := r.Lookup(addrs[i%len(addrs)])
		sink = rec.ISPDomain()
	}
}

func filter(addrs []netip.Addr, keep func(netip.Addr) bool) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

func BenchmarkLookupIPv4(b *testing.B) { benchLookup(b, netip.Addr.Is4) }
func BenchmarkLookupIPv6(b *testing.B) { benchLookup(b, netip.Addr.Is6) }

func BenchmarkLookupMiss(b *testing.B) {
	r := openDB(b, buildDB(b, testMeta, testRecs))
	a := netip.MustParseAddr("1.1.1.1")
	b.ReportAllocs()
	for b.Loop() {
		r.Lookup(a)
	}
}

func BenchmarkFromBytes(b *testing.B) {
	data, _ := bigDB(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromBytes("bench.ipdb", data); err != nil {
			b.Fatal(err)
		}
	}
}
