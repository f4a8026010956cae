package geo_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

var testCities = []mmdbgen.City{
	{Network: "202.101.172.0/24", Country: "CN", Province: "浙江省", City: "Hangzhou", Lat: 30.27, Lon: 120.16, Radius: 20},
	{Network: "1.2.0.0/16", Country: "CN", Province: "Zhejiang Sheng", Lat: 29.1, Lon: 120.0, Radius: 200},
	{Network: "202.106.0.0/24", Country: "CN", Province: "CN-BJ", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 20},
	{Network: "8.8.8.0/24", Country: "US", Lat: 37.751, Lon: -97.822, Radius: 1000},
	{Network: "9.9.9.0/24", Country: "CH", Province: "ZH", City: "Zurich", Lat: 47.37, Lon: 8.54, Radius: 100},
	{Network: "5.6.7.0/24", Country: "CN", City: "Hangzhou", Lat: 30.27, Lon: 120.16, Radius: 50},
	{Network: "2001:da8::/32", Country: "CN", Province: "北京", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 100},
	{Network: "240e::/20", Country: "CN", Lat: 34.77, Lon: 113.72, Radius: 1000},
}

var testASNs = []mmdbgen.ASN{
	{Network: "202.101.172.0/24", ASN: 4134, Org: "Chinanet"},
	{Network: "1.2.3.0/24", ASN: 4134, Org: "CHINANET-BACKBONE"},
	{Network: "202.106.0.0/24", ASN: 4808, Org: "China Unicom Beijing Province Network"},
	{Network: "8.8.8.0/24", ASN: 15169, Org: "Google LLC"},
	{Network: "9.9.9.0/24", ASN: 64512, Org: "China Mobile International"},
	{Network: "2001:da8::/32", ASN: 23910, Org: "China Next Generation Internet CERNET2"},
	{Network: "240e::/20", ASN: 4134, Org: "Chinanet"},
	{Network: "2409:8000::/20", Org: "China Mobile Communications Group"},
}

func openTestDB(t testing.TB) *geo.DB {
	t.Helper()
	city, asn := testsupport.WriteDBs(t, t.TempDir(), testCities, testASNs)
	db, err := geo.Open(city, asn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestLookup(t *testing.T) {
	db := openTestDB(t)
	tests := []struct {
		addr string
		want geo.Location
	}{
		{"202.101.172.35", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "Hangzhou", HasCoords: true,
			Lat: 30.27, Lon: 120.16, Radius: 20, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceDB}},
		{"::ffff:202.101.172.35", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", City: "Hangzhou", HasCoords: true,
			Lat: 30.27, Lon: 120.16, Radius: 20, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceDB}},
		// /16 city + /24 ASN: the /24 bounds the scope.
		{"1.2.3.4", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", HasCoords: true,
			Lat: 29.1, Lon: 120.0, Radius: 200, ISP: "telecom", ASN: 4134, Bits: 24, Source: geo.SourceDB}},
		// Outside the ASN /24 the ASN gap 1.2.0.0/23 is what says "no carrier".
		{"1.2.0.9", geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", HasCoords: true,
			Lat: 29.1, Lon: 120.0, Radius: 200, Bits: 23, Source: geo.SourceDB}},
		{"202.106.0.20", geo.Location{Country: "CN", Continent: "AS", Province: "BJ", City: "Beijing", HasCoords: true,
			Lat: 39.9, Lon: 116.4, Radius: 20, ISP: "unicom", ASN: 4808, Bits: 24, Source: geo.SourceDB}},
		// Country-level only: the centroid is not a coordinate.
		{"8.8.8.8", geo.Location{Country: "US", Continent: "NA", Radius: 0, ISP: "google llc", ASN: 15169, Bits: 24, Source: geo.SourceDB}},
		// Carrier by name pattern when the ASN is not in the table.
		{"9.9.9.9", geo.Location{Country: "CH", Continent: "EU", Province: "ZH", City: "Zurich", HasCoords: true,
			Lat: 47.37, Lon: 8.54, Radius: 100, ISP: "mobile", ASN: 64512, Bits: 24, Source: geo.SourceDB}},
		// A city without a province still has coordinates.
		{"5.6.7.8", geo.Location{Country: "CN", Continent: "AS", City: "Hangzhou", HasCoords: true,
			Lat: 30.27, Lon: 120.16, Radius: 50, Bits: 24, Source: geo.SourceDB}},
		{"2001:da8:8000::1", geo.Location{Country: "CN", Continent: "AS", Province: "BJ", City: "Beijing", HasCoords: true,
			Lat: 39.9, Lon: 116.4, Radius: 100, ISP: "edu", ASN: 23910, Bits: 32, Source: geo.SourceDB}},
		{"240e:388::1", geo.Location{Country: "CN", Continent: "AS", ISP: "telecom", ASN: 4134, Bits: 20, Source: geo.SourceDB}},
		// ASN record only, carrier from the org name.
		{"2409:8a00::1", geo.Location{ISP: "mobile", Bits: 20, Source: geo.SourceDB}},
		{"10.1.2.3", geo.Location{Special: true, Bits: 8}},
		{"::ffff:192.168.7.7", geo.Location{Special: true, Bits: 16}},
		{"fd00::1", geo.Location{Special: true, Bits: 7}},
		{"2001:db8::1", geo.Location{Special: true, Bits: 32}},
	}
	for _, tc := range tests {
		got := lookup(db, tc.addr)
		if got != tc.want {
			t.Errorf("Lookup(%s) =\n %+v\nwant\n %+v", tc.addr, got, tc.want)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	db := openTestDB(t)
	for _, s := range []string{"5.5.5.5", "77.88.8.8", "2a00:1450::1", "::ffff:5.5.5.5"} {
		addr := netip.MustParseAddr(s)
		got := db.Lookup(addr)
		if got.Country != "" || got.Source != geo.SourceNone || got.Special || got.ISP != "" {
			t.Errorf("Lookup(%s) = %+v, want nothing known", s, got)
		}
		if got.Bits == 0 || int(got.Bits) > addr.Unmap().BitLen() {
			t.Errorf("Lookup(%s).Bits = %d, want the length of the empty network", s, got.Bits)
		}
		// Every address of the reported network must be unknown too.
		p, _ := addr.Unmap().Prefix(int(got.Bits))
		for _, a := range []netip.Addr{p.Addr(), lastAddr(p)} {
			if l := db.Lookup(a); l.Country != "" || l.ISP != "" {
				t.Errorf("Lookup(%s) = %+v inside unknown %s", a, l, p)
			}
		}
	}
}

// lookup is what the plugin makes of a database answer: the carrier table
// maps its raw organisation name.
func lookup(db *geo.DB, addr string) geo.Location {
	l := db.Lookup(netip.MustParseAddr(addr))
	geo.DefaultCarriers().Apply(&l)
	return l
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestLookupCityOnly(t *testing.T) {
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	if err := mmdbgen.WriteCity(city, testCities); err != nil {
		t.Fatalf("WriteCity: %v", err)
	}
	db, err := geo.Open(city, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	got := db.Lookup(netip.MustParseAddr("1.2.3.4"))
	want := geo.Location{Country: "CN", Continent: "AS", Province: "ZJ", HasCoords: true, Lat: 29.1, Lon: 120.0, Radius: 200, Bits: 16, Source: geo.SourceDB}
	if got != want {
		t.Errorf("Lookup = %+v, want %+v", got, want)
	}
	info := db.Info()
	if c := info[0]; c.DatabaseType != "GeoLite2-City" || c.BuildEpoch != mmdbgen.BuildEpoch || c.Path != city {
		t.Errorf("Info city = %+v", c)
	}
	if len(info) != 1 {
		t.Errorf("Info = %+v, want the City database only", info)
	}
}

// Databases written with mmdbwriter directly: a GeoLite2-Country database, an
// old City build with numeric CN subdivision codes, and a GeoIP2-ISP database.
func TestLookupOtherSchemas(t *testing.T) {
	dir := t.TempDir()
	country := filepath.Join(dir, "Country.mmdb")
	writeRaw(t, country, "GeoLite2-Country", map[string]mmdbtype.Map{
		"61.139.2.0/24": {
			"continent":          mmdbtype.Map{"code": mmdbtype.String("AS")},
			"country":            mmdbtype.Map{"iso_code": mmdbtype.String("CN")},
			"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("CN")},
		},
		"1.1.1.0/24": {"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("AU")}},
	})
	oldCity := filepath.Join(dir, "OldCity.mmdb")
	writeRaw(t, oldCity, "GeoIP2-City", map[string]mmdbtype.Map{
		"61.139.2.0/24": {
			"country":      mmdbtype.Map{"iso_code": mmdbtype.String("CN")},
			"subdivisions": mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String("51")}, mmdbtype.Map{"iso_code": mmdbtype.String("XX")}},
			"city":         mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String("Chengdu"), "zh-CN": mmdbtype.String("成都")}},
			"location": mmdbtype.Map{"latitude": mmdbtype.Float64(30.57), "longitude": mmdbtype.Float64(104.07),
				"accuracy_radius": mmdbtype.Uint16(50), "time_zone": mmdbtype.String("Asia/Shanghai")},
		},
	})
	isp := filepath.Join(dir, "ISP.mmdb")
	writeRaw(t, isp, "GeoIP2-ISP", map[string]mmdbtype.Map{
		"61.139.2.0/24": {
			"autonomous_system_number":       mmdbtype.Uint32(64511),
			"autonomous_system_organization": mmdbtype.String("Some Transit"),
			"isp":                            mmdbtype.String("China Telecom Sichuan"),
			"organization":                   mmdbtype.String("Chengdu Office"),
		},
	})
	tests := []struct {
		city, asn, addr string
		want            geo.Location
	}{
		{country, "", "61.139.2.2", geo.Location{Country: "CN", Continent: "AS", Bits: 24, Source: geo.SourceDB}},
		{country, "", "1.1.1.1", geo.Location{Country: "AU", Continent: "OC", Bits: 24, Source: geo.SourceDB}},
		{oldCity, isp, "61.139.2.2", geo.Location{Country: "CN", Continent: "AS", Province: "SC", City: "Chengdu", HasCoords: true,
			Lat: 30.57, Lon: 104.07, Radius: 50, ISP: "telecom", ASN: 64511, Bits: 24, Source: geo.SourceDB}},
	}
	for _, tc := range tests {
		db, err := geo.Open(tc.city, tc.asn)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		got := lookup(db, tc.addr)
		db.Close()
		if got != tc.want {
			t.Errorf("Lookup(%s) in %s = %+v, want %+v", tc.addr, filepath.Base(tc.city), got, tc.want)
		}
	}
}

func writeRaw(t *testing.T, path, dbType string, recs map[string]mmdbtype.Map) {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for n, rec := range recs {
		_, ipnet, err := net.ParseCIDR(n)
		if err != nil {
			t.Fatalf("ParseCIDR: %v", err)
		}
		if err := tree.Insert(ipnet, rec); err != nil {
			t.Fatalf("Insert: %v", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer f.Close()
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "City.mmdb")
	if err := mmdbgen.WriteCity(good, testCities); err != nil {
		t.Fatalf("WriteCity: %v", err)
	}
	corrupt := filepath.Join(dir, "corrupt.mmdb")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("not a maxmind db ", 64)), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	missing := filepath.Join(dir, "missing.mmdb")
	tests := []struct{ city, asn, name string }{
		{missing, "", missing},
		{corrupt, "", corrupt},
		{good, missing, missing},
		{good, corrupt, corrupt},
		{"", "", "no database"},
	}
	for _, tc := range tests {
		db, err := geo.Open(tc.city, tc.asn)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q, %q): expected an error", tc.city, tc.asn)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Open(%q, %q) error %q does not name %q", tc.city, tc.asn, err, tc.name)
		}
	}
}

// Lookups from several goroutines give the answers of serial lookups.
func TestLookupConcurrent(t *testing.T) {
	db := openTestDB(t)
	addrs := []netip.Addr{netip.MustParseAddr("202.101.172.35"), netip.MustParseAddr("240e::1"), netip.MustParseAddr("5.5.5.5")}
	serial := make([]geo.Location, len(addrs))
	for i, a := range addrs {
		serial[i] = db.Lookup(a)
	}
	if serial[0].Province != "ZJ" {
		t.Fatalf("Serial lookup of %s: %+v, want Zhejiang", addrs[0], serial[0])
	}
	const workers, rounds = 4, 200
	errs := make(chan string, workers)
	for g := range workers {
		go func() {
			defer func() { errs <- "" }()
			for i := range rounds {
				k := (g + i) % len(addrs)
				if got := db.Lookup(addrs[k]); got != serial[k] {
					errs <- fmt.Sprintf("Concurrent Lookup(%s) = %+v, serial %+v", addrs[k], got, serial[k])
					return
				}
			}
		}()
	}
	for done := 0; done < workers; {
		if e := <-errs; e != "" {
			t.Error(e)
		} else {
			done++
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	db := openTestDB(b)
	addr := netip.MustParseAddr("202.101.172.35")
	b.ReportAllocs()
	for b.Loop() {
		db.Lookup(addr)
	}
}

// TestOpenSwapped: a database given to the wrong option opens fine and
// places no client; its metadata type must refuse it, naming the file, the
// type found and the option it belongs to.
func TestOpenSwapped(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, testCities, testASNs)
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{{Network: "1.2.3.0/24", CountryName: "中国", CCode: "CN"}})
	tests := []struct {
		f    geo.Files
		kind string
		want []string
	}{
		{geo.Files{"city": {asn}}, "city", []string{asn, `"GeoLite2-ASN"`, "give it to asn"}},
		{geo.Files{"city": {city}, "asn": {city}}, "asn", []string{city, `"GeoLite2-City"`, "give it to geoip"}},
		{geo.Files{"ipdb": {city}}, "ipdb", []string{city, `"GeoLite2-City"`, "not an IPIP.net database", "give it to geoip"}},
		{geo.Files{"city": {ip}}, "city", []string{ip, "IPIP.net", "give it to ipdb"}},
	}
	for _, tc := range tests {
		db, err := geo.OpenFiles(tc.f)
		if err == nil {
			db.Close()
			t.Errorf("OpenFiles(%+v): expected an error", tc.f)
			continue
		}
		var fe *geo.FileError
		if !errors.As(err, &fe) || fe.Kind != tc.kind {
			t.Errorf("OpenFiles(%+v) = %v, want a FileError of kind %s", tc.f, err, tc.kind)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("OpenFiles(%+v) error %q does not say %q", tc.f, err, w)
			}
		}
	}
}
