package geo_test

import (
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// The formats' list says what the Corefile and explain always said: the
// options, their order, the required-database errors and the steps.
func TestFormats(t *testing.T) {
	if got := geo.Options(); !slices.Equal(got, []string{"geoip", "asn", "ipdb", "ip2region"}) {
		t.Errorf("Options() = %q", got)
	}
	if got, want := geo.Required(), "geoip FILE is required (or ipdb FILE, or ip2region FILE)"; got != want {
		t.Errorf("Required() = %q, want %q", got, want)
	}
	if _, err := geo.OpenFiles(geo.Files{"asn": {"asn.mmdb"}}); err == nil || err.Error() != "geo: no database file given: a City, an IPIP.net or an ip2region database is required" {
		t.Errorf("OpenFiles(asn only) = %v", err)
	}
	kinds, options := map[string]bool{}, map[string]bool{}
	for _, f := range geo.Formats {
		if kinds[f.Kind] || options[f.Option] {
			t.Errorf("Format %+v: its kind or option is another's too", f)
		}
		kinds[f.Kind], options[f.Option] = true, true
		if geo.FormatOf(f.Kind) != f || geo.FormatByOption(f.Option) != f {
			t.Errorf("Format %s is not found by its kind and option", f.Kind)
		}
		if f.MaxFiles > 1 && f.Args == "" {
			t.Errorf("Format %s takes %d files and does not say which", f.Kind, f.MaxFiles)
		}
	}
	if geo.FormatOf("nope") != nil || geo.FormatByOption("nope") != nil {
		t.Error("An unknown kind or option has a format")
	}
	if got := geo.BaseStep(); got != "geoip" {
		t.Errorf("BaseStep() = %q", got)
	}
	for src, want := range map[geo.Source]string{geo.SourceDB: "geoip", geo.SourceIPDB: "ipdb", geo.SourceIP2Region: "ip2region", geo.SourceNone: "geoip"} {
		if got := geo.Decided(geo.Location{Source: src}); got != want {
			t.Errorf("Decided(%v) = %q, want %q", src, got, want)
		}
	}
	if got := (geo.Files{"city": {"c"}, "ip2region": {"v4", ""}, "ipdb": {"i"}, "asn": {""}}).Paths(); !slices.Equal(got, []string{"c", "i", "v4"}) {
		t.Errorf("Paths() = %q, want in the formats' order without blanks", got)
	}
}

// Explain lists the base's step always and every other database's when it
// has the address, in the formats' order, whatever their ranks.
func TestExplainSteps(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{{Network: "1.2.0.0/16", Country: "CN", Province: "ZJ"}},
		[]mmdbgen.ASN{{Network: "1.0.0.0/8", ASN: 4134, Org: "CHINANET-BACKBONE"}})
	x4 := writeXDB(t, filepath.Join(dir, "v4.xdb"), 4, xdbRec("1.2.1.0/24", "中国", "广东省", "广州市", "联通", "CN"))
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{{Network: "1.2.1.0/24", CountryName: "中国", RegionName: "上海", CityName: "上海", ISP: "电信", CCode: "CN"}})
	all, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}, "ipdb": {ip}, "ip2region": {x4}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := geo.OpenFiles(geo.Files{"ip2region": {x4}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		db    *geo.DB
		addr  string
		steps []string // name:province, "-" when not found
	}{
		{all, "1.2.1.1", []string{"geoip:ZJ", "ipdb:SH", "ip2region:GD"}},
		{all, "1.2.9.1", []string{"geoip:ZJ"}},
		{all, "9.9.9.9", []string{"geoip:-"}},
		{all, "127.0.0.1", []string{"geoip:-"}},
		{alone, "1.2.1.1", []string{"geoip:-", "ip2region:GD"}},
	} {
		var got []string
		for _, s := range tc.db.Explain(netip.MustParseAddr(tc.addr)) {
			p := s.Province
			if !s.Found {
				p = "-"
			}
			got = append(got, s.Name+":"+p)
		}
		if !slices.Equal(got, tc.steps) {
			t.Errorf("Explain(%s) = %q, want %q", tc.addr, got, tc.steps)
		}
	}
	if loc := all.Lookup(netip.MustParseAddr("1.2.1.1")); loc.Source != geo.SourceIPDB || loc.Province != "SH" {
		t.Errorf("Lookup = %+v, want the IPIP.net database's Shanghai over ip2region and MaxMind", loc)
	}
}
