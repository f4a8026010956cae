package ipdb

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdbgen"
)

func TestLookup(t *testing.T) {
	r := openDB(t, buildDB(t, testMeta, testRecs))
	en, err := r.WithLanguage("EN")
	if err != nil {
		t.Fatalf("WithLanguage: %v", err)
	}
	// bits is the block the answer holds for: inside 202.101.0.0/16 but
	// beside 202.101.172.0/24 that is /17 for 202.101.1.1.
	tests := []struct {
		addr                        string
		en                          bool
		ok                          bool
		bits                        int
		country, region, city, isp  string
		owner, lat, lon, code, cont string
	}{
		{addr: "202.101.172.35", ok: true, bits: 24, country: "中国", region: "浙江", city: "杭州", isp: "电信", lat: "30.29", lon: "120.16", code: "CN", cont: "AP"},
		{addr: "202.101.172.35", en: true, ok: true, bits: 24, country: "China", region: "Zhejiang", city: "Hangzhou", isp: "ChinaTelecom", lat: "30.29", lon: "120.16", code: "CN", cont: "AP"},
		{addr: "::ffff:202.101.172.35", ok: true, bits: 24, country: "中国", region: "浙江", city: "杭州", isp: "电信", lat: "30.29", lon: "120.16", code: "CN", cont: "AP"},
		{addr: "202.101.1.1", ok: true, bits: 17, country: "中国", region: "浙江", isp: "电信", code: "CN", cont: "AP"},
		{addr: "202.101.255.255", ok: true, bits: 18, country: "中国", region: "浙江", isp: "电信", code: "CN", cont: "AP"},
		{addr: "202.106.0.20", ok: true, bits: 32, country: "中国", region: "北京", city: "北京", isp: "联通", lat: "39.90", lon: "116.40", code: "CN", cont: "AP"},
		{addr: "202.106.0.21"},
		{addr: "8.8.8.8", en: true, ok: true, bits: 24, country: "United States", region: "California", isp: "google.com", owner: "google.com", code: "US", cont: "NA"},
		{addr: "1.1.1.1"},
		{addr: "0.0.0.0"},
		{addr: "255.255.255.255"},
		{addr: "240e:1::1", ok: true, bits: 20, country: "中国", isp: "电信", code: "CN", cont: "AP"},
		{addr: "2001:da8:1::1", ok: true, bits: 33, country: "中国", isp: "教育网", owner: "edu.cn", code: "CN", cont: "AP"},
		{addr: "2001:da8:8000::6666", en: true, ok: true, bits: 48, country: "China", region: "Beijing", city: "Beijing", isp: "CERNET", owner: "edu.cn", code: "CN", cont: "AP"},
		{addr: "2400:3200::1"},
		{addr: "::"},
		{addr: "::1"},
		// IPv4-compatible, not mapped: an IPv6 address outside the IPv4 subtree.
		{addr: "::202.101.172.35"},
	}
	for _, tc := range tests {
		rd := r
		if tc.en {
			rd = en
		}
		rec, bits, ok := rd.Lookup(netip.MustParseAddr(tc.addr))
		if ok != tc.ok || bits != tc.bits {
			t.Errorf("Lookup(%s) = bits %d, ok %v; want %d, %v", tc.addr, bits, ok, tc.bits, tc.ok)
			continue
		}
		got := []string{rec.CountryName(), rec.RegionName(), rec.CityName(), rec.ISPDomain(), rec.OwnerDomain(), rec.Latitude(), rec.Longitude(), rec.CountryCode(), rec.ContinentCode()}
		want := []string{tc.country, tc.region, tc.city, tc.isp, tc.owner, tc.lat, tc.lon, tc.code, tc.cont}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("Lookup(%s) en=%v = %q, want %q", tc.addr, tc.en, got, want)
		}
	}
	if _, _, ok := r.Lookup(netip.Addr{}); ok {
		t.Errorf("Lookup of the zero Addr succeeded")
	}
}

func TestField(t *testing.T) {
	r := openDB(t, buildDB(t, testMeta, testRecs))
	rec, _, ok := r.Lookup(netip.MustParseAddr("8.8.8.8"))
	if !ok {
		t.Fatalf("Lookup(8.8.8.8) not found")
	}
	tests := []struct{ name, want string }{
		{"country_name", "美国"},
		{"region_name", "加利福尼亚州"},
		{"city_name", ""},
		{"continent_code", "NA"},
		{"idd_code", "1"},
		{"timezone", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := rec.Field(tc.name); got != tc.want {
			t.Errorf("Field(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	// Fields the file lacks read as "".
	if got := rec.DistrictName() + rec.ChinaAdminCode(); got != "" {
		t.Errorf("Missing fields = %q, want \"\"", got)
	}
	var zero Record
	if zero.CountryName() != "" || zero.Field("country_name") != "" {
		t.Errorf("Zero Record has values")
	}
}

func TestLanguages(t *testing.T) {
	r := openDB(t, buildDB(t, testMeta, testRecs))
	if r.Language() != "CN" {
		t.Errorf("Default language = %q, want CN", r.Language())
	}
	if got := strings.Join(r.Languages(), ","); got != "CN,EN" {
		t.Errorf("Languages = %s, want CN,EN", got)
	}
	if _, err := r.WithLanguage("FR"); err == nil || !strings.Contains(err.Error(), "FR") {
		t.Errorf("WithLanguage(FR) = %v, want an error naming FR", err)
	}

	// Without CN the first language in sorted order is used.
	m := ipdbgen.Meta{Languages: []string{"JA", "EN", "DE"}, Fields: []string{"country_name", "city_name"}}
	rec := ipdbgen.Rec{Network: netip.MustParsePrefix("1.2.3.0/24"), Values: map[string][]string{
		"JA": {"日本", "東京"}, "EN": {"Japan", "Tokyo"}, "DE": {"Japan", "Tokio"},
	}}
	r = openDB(t, buildDB(t, m, []ipdbgen.Rec{rec}))
	for _, tc := range []struct{ lang, city string }{{"", "Tokio"}, {"DE", "Tokio"}, {"EN", "Tokyo"}, {"JA", "東京"}} {
		rd := r
		if tc.lang != "" {
			var err error
			if rd, err = r.WithLanguage(tc.lang); err != nil {
				t.Fatalf("WithLanguage(%s): %v", tc.lang, err)
			}
		}
		got, _, _ := rd.Lookup(netip.MustParseAddr("1.2.3.4"))
		if got.CityName() != tc.city || got.Field("city_name") != tc.city {
			t.Errorf("Language %q: city %q / %q, want %q", tc.lang, got.CityName(), got.Field("city_name"), tc.city)
		}
	}
}

func TestMeta(t *testing.T) {
	b := buildDB(t, testMeta, testRecs)
	r := openDB(t, b)
	m := r.Meta()
	if m.Build != testMeta.Build || m.IPVersion != IPv4|IPv6 {
		t.Errorf("Build, IPVersion = %d, %d; want %d, 3", m.Build, m.IPVersion, testMeta.Build)
	}
	if m.Languages["CN"] != 0 || m.Languages["EN"] != len(testFields) || len(m.Languages) != 2 {
		t.Errorf("Languages = %v", m.Languages)
	}
	if strings.Join(m.Fields, ",") != strings.Join(testFields, ",") {
		t.Errorf("Fields = %v", m.Fields)
	}
	if m.TotalSize != len(b)-dataStart(b) || m.NodeCount < 128 {
		t.Errorf("TotalSize, NodeCount = %d, %d", m.TotalSize, m.NodeCount)
	}
	// The copy is the caller's.
	m.Fields[0], m.Languages["CN"] = "x", 5
	if m2 := r.Meta(); m2.Fields[0] != "country_name" || m2.Languages["CN"] != 0 {
		t.Errorf("Meta shares its slices or maps with the Reader")
	}
}

// A file with only one IP version answers nothing for the other.
func TestIPVersions(t *testing.T) {
	tests := []struct {
		name    string
		recs    []ipdbgen.Rec
		version uint16
		v4, v6  bool
	}{
		{"IPv4", testRecs[:4], IPv4, true, false},
		{"IPv6", testRecs[4:], IPv6, false, true},
		{"Mixed", testRecs, IPv4 | IPv6, true, true},
	}
	for _, tc := range tests {
		r := openDB(t, buildDB(t, testMeta, tc.recs))
		if r.Meta().IPVersion != tc.version {
			t.Errorf("%s: IPVersion = %d, want %d", tc.name, r.Meta().IPVersion, tc.version)
		}
		if _, _, ok := r.Lookup(netip.MustParseAddr("202.101.172.35")); ok != tc.v4 {
			t.Errorf("%s: IPv4 lookup ok = %v, want %v", tc.name, ok, tc.v4)
		}
		if _, _, ok := r.Lookup(netip.MustParseAddr("240e::1")); ok != tc.v6 {
			t.Errorf("%s: IPv6 lookup ok = %v, want %v", tc.name, ok, tc.v6)
		}
	}
}

// A default IPv4 route makes the IPv4 root itself a record, with 0 bits;
// next to a longer network it holds for the blocks beside that one.
func TestIPv4Default(t *testing.T) {
	m := ipdbgen.Meta{Languages: []string{"CN"}, Fields: []string{"country_name"}}
	recs := []ipdbgen.Rec{
		{Network: netip.MustParsePrefix("0.0.0.0/0"), Values: map[string][]string{"CN": {"any"}}},
		{Network: netip.MustParsePrefix("10.0.0.0/8"), Values: map[string][]string{"CN": {"ten"}}},
	}
	r := openDB(t, buildDB(t, m, recs[:1]))
	if rec, bits, ok := r.Lookup(netip.MustParseAddr("1.2.3.4")); !ok || bits != 0 || rec.CountryName() != "any" {
		t.Errorf("Lookup with only 0.0.0.0/0 = %q, %d, %v", rec.CountryName(), bits, ok)
	}
	r = openDB(t, buildDB(t, m, recs))
	for _, tc := range []struct {
		addr, want string
		bits       int
	}{{"1.2.3.4", "any", 5}, {"10.1.2.3", "ten", 8}, {"200.1.1.1", "any", 1}} {
		if rec, bits, ok := r.Lookup(netip.MustParseAddr(tc.addr)); !ok || bits != tc.bits || rec.CountryName() != tc.want {
			t.Errorf("Lookup(%s) = %q, %d, %v; want %q, %d", tc.addr, rec.CountryName(), bits, ok, tc.want, tc.bits)
		}
	}
}

// Random nested networks agree with a brute-force longest-prefix match.
func TestLongestPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	m := ipdbgen.Meta{Languages: []string{"CN"}, Fields: []string{"city_name"}}
	var recs []ipdbgen.Rec
	seen := map[netip.Prefix]bool{}
	for len(recs) < 400 {
		var p netip.Prefix
		if rng.IntN(2) == 0 {
			a := netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256))})
			p = netip.PrefixFrom(a, 8+rng.IntN(25))
		} else {
			a := netip.AddrFrom16([16]byte{0x24, 0x0e, byte(rng.IntN(4)), byte(rng.IntN(256)), 15: byte(rng.IntN(256))})
			p = netip.PrefixFrom(a, 16+rng.IntN(113))
		}
		p = p.Masked()
		if seen[p] {
			continue
		}
		seen[p] = true
		recs = append(recs, ipdbgen.Rec{Network: p, Values: map[string][]string{"CN": {p.String()}}})
	}
	r := openDB(t, buildDB(t, m, recs))
	for i := range 5000 {
		var a netip.Addr
		if i%2 == 0 {
			a = netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		} else {
			a = netip.AddrFrom16([16]byte{0x24, 0x0e, byte(rng.IntN(4)), byte(rng.IntN(256)), 15: byte(rng.IntN(256))})
		}
		var best netip.Prefix
		for _, rec := range recs {
			if rec.Network.Contains(a) && (!best.IsValid() || rec.Network.Bits() > best.Bits()) {
				best = rec.Network
			}
		}
		rec, bits, ok := r.Lookup(a)
		if !best.IsValid() {
			if ok {
				t.Fatalf("Lookup(%s) = %s, want not found", a, rec.CityName())
			}
			continue
		}
		// Next to a longer network the answer holds for a smaller block than
		// best, so bits may exceed best.Bits().
		if !ok || rec.CityName() != best.String() || bits < best.Bits() || bits > a.BitLen() {
			t.Fatalf("Lookup(%s) = %q, %d, %v; want %s", a, rec.CityName(), bits, ok, best)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "test.ipdb")
	if err := ipdbgen.Write(path, testMeta, testRecs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if rec, _, ok := r.Lookup(netip.MustParseAddr("202.106.0.20")); !ok || rec.CityName() != "北京" {
		t.Errorf("Lookup(202.106.0.20) = %q, %v", rec.CityName(), ok)
	}
	missing := filepath.Join(dir, "missing.ipdb")
	if _, err := Open(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) = %v, want an error naming the file", err)
	}
	bad := filepath.Join(dir, "bad.ipdb")
	if err := os.WriteFile(bad, []byte("garbage!"), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if _, err := Open(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("Open(bad) = %v, want an error naming the file", err)
	}
}
