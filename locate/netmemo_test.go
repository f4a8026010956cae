package locate

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
	"github.com/gslbdns/gslb/geo/ipdbgen"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// memoDBs opens City and ASN databases whose networks cross each other's
// boundaries, with adjacent City networks that differ only in the city
// (merged into wider networks), and, when chinese, an IPIP.net database and
// an ip2region file over 36.0.0.0/8 with networks finer than the
// others and some /25s; the IPIP.net database has no IPv6 (a hole: those
// are walked every time).
func memoDBs(t testing.TB, chinese bool) *geo.DB {
	t.Helper()
	dir := t.TempDir()
	var cities []mmdbgen.City
	for i := range 64 { // 36.0.0.0/16 .. 36.63.0.0/16 in /18s, the city alternating
		p := []string{"ZJ", "ZJ", "BJ", "GD"}[i/4%4]
		cities = append(cities, mmdbgen.City{Network: fmt.Sprintf("36.%d.%d.0/18", i/4, i%4*64), Country: "CN", Province: p,
			City: fmt.Sprintf("%s %d", p, i%2), Lat: 30, Lon: 120, Radius: uint16(10 + i%2)})
	}
	cities = append(cities, mmdbgen.City{Network: "36.1.5.0/24", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.2, Lon: 121.5, Radius: 5},
		mmdbgen.City{Network: "36.2.7.128/25", Country: "CN", Province: "SC", City: "Chengdu", Lat: 30.6, Lon: 104, Radius: 5},
		mmdbgen.City{Network: "2400:3200::/32", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.3, Lon: 120.2, Radius: 50},
		mmdbgen.City{Network: "2400:3200:10::/44", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 50})
	asns := []mmdbgen.ASN{{Network: "36.0.0.0/14", ASN: 4134, Org: "CHINANET"}, {Network: "36.4.0.0/15", ASN: 4837, Org: "CHINA UNICOM"},
		{Network: "36.0.64.0/20", ASN: 9808, Org: "China Mobile"}, {Network: "2400:3200::/33", ASN: 4134, Org: "CHINANET"}}
	city, asn := testsupport.WriteDBs(t, dir, cities, asns)
	f := geo.Files{"city": {city}, "asn": {asn}}
	if chinese {
		f["ipdb"] = []string{filepath.Join(dir, "c.ipdb")}
		m := ipdbgen.Meta{Build: 1, Languages: []string{"CN"}, Fields: []string{"country_name", "region_name", "city_name", "isp_domain", "country_code"}}
		rec := func(p, region, city, isp string) ipdbgen.Rec {
			return ipdbgen.Rec{Network: netip.MustParsePrefix(p), Values: map[string][]string{"CN": {"中国", region, city, isp, "CN"}}}
		}
		if err := ipdbgen.Write(f["ipdb"][0], m, []ipdbgen.Rec{rec("36.0.0.0/8", "", "", ""), rec("36.0.0.0/22", "浙江", "杭州", "电信"), rec("36.0.4.0/23", "广东", "广州", "联通"),
			rec("36.0.6.128/25", "四川", "成都", "移动"), rec("36.3.0.0/16", "北京", "北京", "电信")}); err != nil {
			t.Fatal(err)
		}
		f["ip2region"] = []string{filepath.Join(dir, "v4.xdb")}
		cn := func(from, to string) ip2regiongen.Rec {
			return ip2regiongen.Rec{Start: netip.MustParseAddr(from), End: netip.MustParseAddr(to), Region: "中国|0|0|0|CN"}
		}
		if err := ip2regiongen.Write(f["ip2region"][0], ip2regiongen.Meta{IPVersion: 4}, []ip2regiongen.Rec{
			cn("36.0.0.0", "36.0.7.255"),
			ip2regiongen.PrefixRec(netip.MustParsePrefix("36.0.8.0/21"), "中国|江苏省|南京市|电信|CN"),
			cn("36.0.16.0", "36.4.255.255"),
			ip2regiongen.PrefixRec(netip.MustParsePrefix("36.5.0.0/17"), "中国|湖北省|武汉市|联通|CN"),
			cn("36.5.128.0", "36.255.255.255"),
		}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := geo.OpenFiles(f)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestNetMemoSameAnswers: the databases' link, which remembers networks,
// answers every /24 (/48) exactly as a walk of every database does, in any
// order, and walks once per network.
func TestNetMemoSameAnswers(t *testing.T) {
	for _, chinese := range []bool{false, true} {
		t.Run(fmt.Sprint("chinese=", chinese), func(t *testing.T) {
			db := memoDBs(t, chinese)
			var addrs []netip.Addr
			for i := range 64 << 8 { // every /24 of 36.0.0.0/10, two addresses each
				addrs = append(addrs, netip.AddrFrom4([4]byte{36, byte(i >> 8), byte(i), 1}), netip.AddrFrom4([4]byte{36, byte(i >> 8), byte(i), 200}))
			}
			for i := range 1 << 12 {
				a := netip.MustParseAddr("2400:3200::1").As16()
				a[4], a[5] = byte(i>>8), byte(i)
				addrs = append(addrs, netip.AddrFrom16(a))
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
			d := &databases{l: &Locator{}}
			d.l.carriers.Store(geo.DefaultCarriers())
			d.db.Store(db)
			hits := 0
			for _, a := range addrs {
				want, wantOther := db.Compare(a)
				if _, ok := d.memoOf(db).lookup(a); ok {
					hits++
				}
				q := &Query{Addr: a, Key: KeyOf(a)}
				d.Locate(ctx, q)
				if q.Loc != want {
					t.Fatalf("%s: %+v, a walk says %+v", a, q.Loc, want)
				}
				if v, ok := d.memoOf(db).lookup(a); ok && (v.loc != want || v.other != wantOther) {
					t.Fatalf("%s: remembered %+v %+v, a walk says %+v %+v", a, v.loc, v.other, want, wantOther)
				}
			}
			// Most /24s are in networks seen before: far fewer walks than lookups.
			if hits < len(addrs)*3/4 {
				t.Errorf("%d of %d lookups found their network remembered, want most", hits, len(addrs))
			}
		})
	}
}

// TestNetMemoReload: a new DB starts a new memo; nothing of the old one
// answers for it.
func TestNetMemoReload(t *testing.T) {
	l := newLocator(t, Config{DB: testDB(t)})
	a := netip.MustParseAddr("1.0.1.7")
	if r := l.Locate(ctx, a); r.Province != "ZJ" {
		t.Fatalf("before the reload: %+v", r.Location)
	}
	city, asn := testsupport.WriteDBs(t, t.TempDir(), []mmdbgen.City{
		{Network: "1.0.0.0/16", Country: "CN", Province: "GD", City: "Guangzhou", Lat: 23.1, Lon: 113.3, Radius: 50},
	}, nil)
	db, err := geo.Open(city, asn)
	if err != nil {
		t.Fatal(err)
	}
	l.SetDB(db)
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.9")); r.Province != "GD" {
		t.Fatalf("after the reload: %+v, want GD", r.Location)
	}
}

// lookup is find returning the value.
func (m *netMemo) lookup(addr netip.Addr) (memoValue, bool) {
	var v memoValue
	ok := m.find(addr, &v.loc, &v.other)
	return v, ok
}
