package ip2region_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

type want struct {
	addr                             string
	ok                               bool
	country, province, city, isp, cc string
	bits                             int
}

func check(t *testing.T, r *ip2region.Reader, tests []want) {
	t.Helper()
	for _, w := range tests {
		rec, bits, ok := r.Lookup(netip.MustParseAddr(w.addr))
		if ok != w.ok || bits != w.bits {
			t.Errorf("Lookup(%s) = bits %d ok %v, want bits %d ok %v", w.addr, bits, ok, w.bits, w.ok)
			continue
		}
		got := [5]string{rec.Country, rec.Province, rec.City, rec.ISP, rec.ISO2}
		if exp := [5]string{w.country, w.province, w.city, w.isp, w.cc}; got != exp {
			t.Errorf("Lookup(%s) = %q, want %q", w.addr, got, exp)
		}
	}
}

func TestLookupIPv4(t *testing.T) {
	r, err := ip2region.FromBytes("v4.xdb", v4(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.IPVersion() != 4 || r.Structure() != ip2region.Structure3 || r.Created() != 1735689600 {
		t.Errorf("IPVersion %d Structure %d Created %d", r.IPVersion(), r.Structure(), r.Created())
	}
	// 5 segments, the /14 split into four.
	if r.Len() != 8 {
		t.Errorf("Len = %d, want 8", r.Len())
	}
	check(t, r, []want{
		{"202.101.172.35", true, "中国", "浙江省", "杭州市", "电信", "CN", 24},
		{"::ffff:202.101.172.1", true, "中国", "浙江省", "杭州市", "电信", "CN", 24},
		{"1.0.0.200", true, "Australia", "Queensland", "Brisbane", "", "AU", 24}, // "0" is unknown
		{"113.64.0.1", true, "中国", "广东省", "深圳市", "联通", "CN", 16},
		{"113.67.255.255", true, "中国", "广东省", "深圳市", "联通", "CN", 16},
		{"36.110.0.1", true, "中国", "北京市", "北京市", "移动", "CN", 32},
		{"36.110.0.2", true, "中国", "北京市", "北京市", "移动", "CN", 31},
		{"36.110.0.5", true, "中国", "北京市", "北京市", "移动", "CN", 31},
		{"36.110.0.7", false, "", "", "", "", "", 0},
		{"113.68.0.0", false, "", "", "", "", "", 0},
		{"202.101.173.0", false, "", "", "", "", "", 0},
		{"198.51.100.7", false, "", "", "", "", "", 0},
		{"8.8.8.8", false, "", "", "", "", "", 0},
		{"240e:388::1", false, "", "", "", "", "", 0}, // the other family
	})
}

func TestLookupIPv6(t *testing.T) {
	r, err := ip2region.FromBytes("v6.xdb", v6(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.IPVersion() != 6 {
		t.Errorf("IPVersion = %d", r.IPVersion())
	}
	check(t, r, []want{
		{"240e:388:1::1", true, "中国", "广东省", "深圳市", "联通", "CN", 32},
		{"2409:8a00:ffff::", true, "中国", "北京市", "北京市", "移动", "CN", 32},
		{"2001:da8:8000:1::1", true, "中国", "浙江省", "杭州市", "电信", "CN", 48},
		{"2001:da8:8001::1", false, "", "", "", "", "", 0},
		{"202.101.172.35", false, "", "", "", "", "", 0},
	})
}

// TestStructure2: the files before IPv6 support have regions
// country|area|province|city|isp.
func TestStructure2(t *testing.T) {
	b := build(t, ip2regiongen.Meta{Structure: ip2region.Structure2, IPVersion: 4},
		[]ip2regiongen.Rec{pfx("202.101.172.0/24", "中国|0|浙江省|杭州市|电信")})
	r, err := ip2region.FromBytes("old.xdb", b)
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, []want{{"202.101.172.9", true, "中国", "浙江省", "杭州市", "电信", "", 24}})
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v4.xdb")
	if err := ip2regiongen.Write(path, ip2regiongen.Meta{IPVersion: 4}, recs4); err != nil {
		t.Fatal(err)
	}
	r, err := ip2region.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.Lookup(netip.MustParseAddr("202.101.172.1")); !ok {
		t.Error("202.101.172.1 not found")
	}
	os.Remove(path)
	if _, err := ip2region.Open(path); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

func TestLookupAllocs(t *testing.T) {
	r4, _ := ip2region.FromBytes("v4.xdb", v4(t))
	r6, _ := ip2region.FromBytes("v6.xdb", v6(t))
	a4, a6 := netip.MustParseAddr("202.101.172.35"), netip.MustParseAddr("240e:388:1::1")
	n := testing.AllocsPerRun(100, func() {
		r4.Lookup(a4)
		r6.Lookup(a6)
	})
	if n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

func BenchmarkLookup(b *testing.B) {
	r, _ := ip2region.FromBytes("v4.xdb", v4(b))
	a := netip.MustParseAddr("113.65.1.1")
	for b.Loop() {
		r.Lookup(a)
	}
}
