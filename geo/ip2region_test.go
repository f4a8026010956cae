package geo_test

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

func writeXDB(t *testing.T, path string, ipVersion int, recs ...ip2regiongen.Rec) string {
	t.Helper()
	if err := ip2regiongen.Write(path, ip2regiongen.Meta{IPVersion: ipVersion, Created: 1735689600}, recs); err != nil {
		t.Fatal(err)
	}
	return path
}

func xdbRec(network string, fields ...string) ip2regiongen.Rec {
	return ip2regiongen.PrefixRec(netip.MustParsePrefix(network), ip2regiongen.Region(fields...))
}

// TestIP2RegionMerge: ip2region decides the addresses it places in China
// over MaxMind, the IPIP.net database decides over both, and ip2region
// fills in where the IPIP.net database has no province.
func TestIP2RegionMerge(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.1.0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.3, Lon: 120.2, Radius: 20},
		{Network: "8.8.8.0/24", Country: "US", Province: "CA", City: "Mountain View", Lat: 37.4, Lon: -122.1},
	}, []mmdbgen.ASN{{Network: "1.0.0.0/8", ASN: 4134, Org: "CHINANET-BACKBONE"}})
	x4 := writeXDB(t, filepath.Join(dir, "v4.xdb"), 4,
		xdbRec("1.1.1.0/24", "中国", "浙江省", "杭州市", "电信", "CN"),
		xdbRec("1.2.1.0/24", "中国", "广东省", "广州市", "联通", "CN"),
		xdbRec("1.4.1.0/24", "中国", "湖北省", "武汉市", "移动", "CN"),
		xdbRec("1.6.0.0/16", "中国", "", "", "电信", "CN"),
		xdbRec("8.8.8.0/24", "United States", "California", "", "Google", "US"),
	)
	x6 := writeXDB(t, filepath.Join(dir, "v6.xdb"), 6, xdbRec("240e::/20", "中国", "北京市", "北京市", "电信", "CN"))
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.2.1.0/24", CountryName: "中国", RegionName: "上海", CityName: "上海", ISP: "电信", CCode: "CN"},
		{Network: "1.4.1.0/24", CountryName: "中国", ISP: "联通", CCode: "CN"}, // no province
	})
	mmX, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}, "ip2region": {x6, x4}})
	if err != nil {
		t.Fatal(err)
	}
	all, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}, "ipdb": {ip}, "ip2region": {x4, x6}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := geo.OpenFiles(geo.Files{"ip2region": {x4}})
	if err != nil {
		t.Fatal(err)
	}
	gz, gzLon, _ := geo.ProvinceCapital("CN", "GD")
	sh, shLon, _ := geo.ProvinceCapital("CN", "SH")
	hb, hbLon, _ := geo.ProvinceCapital("CN", "HB")
	bj, bjLon, _ := geo.ProvinceCapital("CN", "BJ")
	carriers := geo.DefaultCarriers()
	tests := []struct {
		name  string
		db    *geo.DB
		addr  string
		want  geo.Location
		other geo.Other
	}{
		{"agree with MaxMind", mmX, "1.1.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "杭州市", HasCoords: true,
			Lat: 30.3, Lon: 120.2, Radius: 20, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceIP2Region},
			geo.Other{Province: "ZJ", ISP: "CHINANET-BACKBONE", ASN: 4134, OK: true}},
		{"over MaxMind: the carrier by name, over the ASN", mmX, "1.2.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "GD", City: "广州市", HasCoords: true,
			Lat: gz, Lon: gzLon, ISP: "unicom", ASN: 4134, Bits: 24, Source: geo.SourceIP2Region, ProvinceCoords: true},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"no province", mmX, "1.6.0.1", geo.Location{Country: "CN", Continent: "AS", ISP: "telecom", ASN: 4134, Bits: 16, Source: geo.SourceIP2Region},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"abroad: MaxMind keeps it", mmX, "8.8.8.8", geo.Location{Country: "US", Continent: "NA", Province: "CA", City: "Mountain View", HasCoords: true,
			Lat: 37.4, Lon: -122.1, Bits: 24, Source: geo.SourceDB}, geo.Other{}},
		{"IPv6", mmX, "240e:1::1", geo.Location{Country: "CN", Continent: "AS", Province: "BJ", City: "北京市", HasCoords: true,
			Lat: bj, Lon: bjLon, ISP: "telecom", Bits: 20, Source: geo.SourceIP2Region, ProvinceCoords: true}, geo.Other{}},
		{"the IPIP.net database wins", all, "1.2.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "SH", City: "上海", HasCoords: true,
			Lat: sh, Lon: shLon, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"ip2region fills the IPIP.net database's missing province", all, "1.4.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "HB", City: "武汉市", HasCoords: true,
			Lat: hb, Lon: hbLon, ISP: "unicom", ASN: 4134, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"ip2region where the IPIP.net database has nothing", all, "1.1.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "杭州市", HasCoords: true,
			Lat: 30.3, Lon: 120.2, Radius: 20, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceIP2Region},
			geo.Other{Province: "ZJ", ISP: "CHINANET-BACKBONE", ASN: 4134, OK: true}},
		{"alone", alone, "1.2.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "GD", City: "广州市", HasCoords: true,
			Lat: gz, Lon: gzLon, ISP: "unicom", Bits: 24, Source: geo.SourceIP2Region, ProvinceCoords: true}, geo.Other{}},
		{"alone abroad: the country", alone, "8.8.8.8", geo.Location{Country: "US", Continent: "NA", Bits: 24, Source: geo.SourceIP2Region}, geo.Other{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loc, other := tc.db.Compare(netip.MustParseAddr(tc.addr))
			carriers.Apply(&loc)
			if loc != tc.want {
				t.Errorf("location\n got %+v\nwant %+v", loc, tc.want)
			}
			if other != tc.other {
				t.Errorf("other = %+v, want %+v", other, tc.other)
			}
		})
	}
	if loc, ok := explainIP2Region(all, netip.MustParseAddr("1.2.1.9")); !ok || loc.Province != "GD" {
		t.Errorf("ExplainIP2Region = %+v %v, want GD", loc, ok)
	}
	if _, ok := explainIP2Region(all, netip.MustParseAddr("9.9.9.9")); ok {
		t.Error("ExplainIP2Region found 9.9.9.9")
	}
	var kinds []string
	for _, m := range all.Info() {
		kinds = append(kinds, m.Kind+":"+m.DatabaseType)
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "ip2region:ip2region-v4 ip2region:ip2region-v6") {
		t.Errorf("Info kinds = %s", got)
	}
	if mmX.Digest() == all.Digest() {
		t.Error("databases with other content have one digest")
	}
}

// TestIP2RegionOpenErrors: a wrong file is refused with its name and the
// option it belongs to.
func TestIP2RegionOpenErrors(t *testing.T) {
	dir := t.TempDir()
	city, _ := testsupport.WriteDBs(t, dir, []mmdbgen.City{{Network: "1.1.0.0/16", Country: "CN"}}, nil)
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{{Network: "1.2.1.0/24", CountryName: "中国", CCode: "CN"}})
	a := writeXDB(t, filepath.Join(dir, "a.xdb"), 4, xdbRec("1.1.1.0/24", "中国", "浙江省", "", "", "CN"))
	b := writeXDB(t, filepath.Join(dir, "b.xdb"), 4, xdbRec("1.1.1.0/24", "中国", "浙江省", "", "", "CN"))
	tests := []struct {
		files geo.Files
		want  []string
	}{
		{geo.Files{"ip2region": {city}}, []string{city, "MaxMind", "not an ip2region"}},
		{geo.Files{"ip2region": {ip}}, []string{ip, "IPIP.net", "give it to ipdb"}},
		{geo.Files{"ip2region": {a, b}}, []string{b, "second IPv4"}},
		{geo.Files{"ip2region": {filepath.Join(dir, "missing.xdb")}}, []string{"missing.xdb"}},
	}
	for _, tc := range tests {
		_, err := geo.OpenFiles(tc.files)
		var fe *geo.FileError
		if err == nil || !errors.As(err, &fe) || fe.Kind != "ip2region" {
			t.Errorf("OpenFiles(%+v) = %v, want an ip2region FileError", tc.files, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("OpenFiles(%+v) = %v, want %q in it", tc.files, err, w)
			}
		}
	}
}

func TestListSource(t *testing.T) {
	a, b := geo.ListSource("chinanet"), geo.ListSource("unicom")
	if a == b || geo.ListSource("chinanet") != a {
		t.Errorf("ListSource: chinanet %d, unicom %d, again %d", a, b, geo.ListSource("chinanet"))
	}
	if a.String() != "list:chinanet" || b.String() != "list:unicom" || geo.SourceIP2Region.String() != "ip2region" {
		t.Errorf("names %q %q %q", a, b, geo.SourceIP2Region)
	}
}

// explainIP2Region is the ip2region step of db's explanation of addr.
func explainIP2Region(db *geo.DB, addr netip.Addr) (geo.Location, bool) {
	for _, s := range db.Explain(addr) {
		if s.Name == "ip2region" {
			return s.Location, s.Found
		}
	}
	return geo.Location{}, false
}
