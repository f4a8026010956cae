package geo_test

import (
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// The IPIP.net database decides province, city and carrier in China;
// MaxMind keeps the ASN, the rest of the world, and its coordinates when
// the provinces agree.
func TestIPDBMerge(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.1.0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.3, Lon: 120.2, Radius: 20},
		{Network: "1.2.0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.3, Lon: 120.2, Radius: 20},
		{Network: "1.3.0.0/16", Country: "CN"},
		{Network: "8.8.8.0/24", Country: "US", Province: "CA", City: "Mountain View", Lat: 37.4, Lon: -122.1},
	}, []mmdbgen.ASN{
		{Network: "1.0.0.0/8", ASN: 4134, Org: "CHINANET-BACKBONE"},
		{Network: "1.5.0.0/16", ASN: 37963, Org: "Hangzhou Alibaba Advertising Co.,Ltd."},
	})
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.1.1.0/24", CountryName: "中国", RegionName: "浙江", CityName: "杭州", ISP: "电信", CCode: "CN"},
		{Network: "1.2.1.0/24", CountryName: "中国", RegionName: "广东", CityName: "广州", ISP: "中移铁通", CCode: "CN"},
		{Network: "1.3.1.0/24", CountryName: "中国", RegionName: "浙江嘉兴桐乡市", ISP: "广电网", CCode: "CN"},
		{Network: "1.4.1.0/24", CountryName: "中国", ISP: "联通", CCode: "CN"},
		{Network: "1.5.1.0/24", CountryName: "中国", RegionName: "浙江", ISP: "阿里云", CCode: "CN"},
		{Network: "1.6.1.0/24", CountryName: "中国", RegionName: "湖北省", ISP: "教育网"},
		{Network: "8.8.8.0/24", CountryName: "美国", RegionName: "加利福尼亚州", ISP: "Google LLC", CCode: "US"},
		{Network: "9.9.9.0/24", CountryName: "瑞士", ISP: "Quad9", CCode: "CH"},
	})
	both, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}, "ipdb": {ip}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := geo.OpenFiles(geo.Files{"ipdb": {ip}})
	if err != nil {
		t.Fatal(err)
	}
	hz, _, _ := geo.ProvinceCapital("CN", "ZJ")
	gz, _, _ := geo.ProvinceCapital("CN", "GD")
	tests := []struct {
		name  string
		db    *geo.DB
		addr  string
		want  geo.Location
		other geo.Other
	}{
		{"agree: MaxMind's coordinates", both, "1.1.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "杭州", HasCoords: true,
			Lat: 30.3, Lon: 120.2, Radius: 20, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceIPDB},
			geo.Other{Province: "ZJ", ISP: "CHINANET-BACKBONE", ASN: 4134, OK: true}},
		{"disagree: the capital's coordinates", both, "1.2.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "GD", City: "广州", HasCoords: true,
			Lat: gz, Lon: 113.26, ISP: "mobile", ASN: 4134, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{Province: "ZJ", ISP: "CHINANET-BACKBONE", ASN: 4134, OK: true}},
		{"region with more after the province", both, "1.3.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", HasCoords: true,
			Lat: hz, Lon: 120.16, ISP: "cbn", ASN: 4134, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134, OK: true}},
		{"China without a province", both, "1.4.1.9", geo.Location{Country: "CN", Continent: "AS", ISP: "unicom", ASN: 4134, Bits: 24, Source: geo.SourceIPDB},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"an unknown carrier name: lower-cased", both, "1.5.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", HasCoords: true,
			Lat: hz, Lon: 120.16, ISP: "阿里云", ASN: 37963, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{ISP: "Hangzhou Alibaba Advertising Co.,Ltd.", ASN: 37963}},
		{"the Chinese country name without a code", both, "1.6.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "HB", HasCoords: true,
			Lat: 30.59, Lon: 114.31, ISP: "edu", ASN: 4134, Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true},
			geo.Other{ISP: "CHINANET-BACKBONE", ASN: 4134}},
		{"abroad: MaxMind decides", both, "8.8.8.8", geo.Location{Country: "US", Continent: "NA", Province: "CA", City: "Mountain View", HasCoords: true,
			Lat: 37.4, Lon: -122.1, Bits: 24, Source: geo.SourceDB}, geo.Other{}},
		{"abroad, MaxMind silent: the country", both, "9.9.9.9", geo.Location{Country: "CH", Continent: "EU", Bits: 24, Source: geo.SourceIPDB}, geo.Other{}},
		{"IPIP.net alone", alone, "1.1.1.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "杭州", HasCoords: true,
			Lat: hz, Lon: 120.16, ISP: "telecom", Bits: 24, Source: geo.SourceIPDB, ProvinceCoords: true}, geo.Other{}},
	}
	for _, tc := range tests {
		got, other := tc.db.Compare(netip.MustParseAddr(tc.addr))
		geo.DefaultCarriers().Apply(&got)
		if got != tc.want {
			t.Errorf("%s: %s =\n %+v\nwant\n %+v", tc.name, tc.addr, got, tc.want)
		}
		if other != tc.other {
			t.Errorf("%s: other %+v, want %+v", tc.name, other, tc.other)
		}
	}
	info := both.Info()
	if len(info) != 3 || info[2].Kind != "ipdb" || info[2].BuildEpoch != 1700000000 {
		t.Errorf("Info = %+v, want the ipdb build last", info)
	}
}
