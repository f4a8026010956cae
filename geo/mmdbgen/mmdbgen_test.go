package mmdbgen

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
)

const demoDir = "../../demo"

// The committed demo databases must be exactly what the generator makes of
// the committed CSV.
func TestDemoRegenerates(t *testing.T) {
	cities, asns, err := ReadCSV(filepath.Join(demoDir, "demo.csv"))
	if err != nil {
		t.Fatalf("ReadCSV: %v", err)
	}
	dir := t.TempDir()
	tests := []struct {
		name  string
		write func(string) error
	}{
		{"gslb-demo-City.mmdb", func(p string) error { return WriteCity(p, cities) }},
		{"gslb-demo-ASN.mmdb", func(p string) error { return WriteASN(p, asns) }},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		if err := tc.write(p); err != nil {
			t.Fatalf("Write %s: %v", tc.name, err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		want, err := os.ReadFile(filepath.Join(demoDir, tc.name))
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Regenerated %s differs from the committed one; run go run ./cmd/mmdbgen", tc.name)
		}
	}
}

func TestDemoLookups(t *testing.T) {
	db, err := geo.Open(filepath.Join(demoDir, "gslb-demo-City.mmdb"), filepath.Join(demoDir, "gslb-demo-ASN.mmdb"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	tests := []struct {
		addr, country, province, city, isp string
		coords                             bool
	}{
		{"202.101.172.35", "CN", "ZJ", "Hangzhou", "telecom", true},
		{"202.96.209.5", "CN", "SH", "Shanghai", "telecom", true},
		{"202.96.128.86", "CN", "GD", "Guangzhou", "telecom", true},
		{"202.106.0.20", "CN", "BJ", "Beijing", "unicom", true},
		{"210.21.196.6", "CN", "GD", "Shenzhen", "unicom", true},
		{"211.136.192.6", "CN", "GD", "Guangzhou", "mobile", true},
		{"101.6.6.6", "CN", "BJ", "Beijing", "edu", true},
		{"114.114.114.114", "CN", "JS", "Nanjing", "", true},
		{"61.139.2.69", "CN", "SC", "Chengdu", "telecom", true},
		{"218.30.19.40", "CN", "SN", "Xi'an", "telecom", true},
		{"223.5.5.5", "CN", "ZJ", "Hangzhou", "hangzhou alibaba advertising co.,ltd.", true},
		{"8.8.8.8", "US", "", "", "google llc", false},
		{"1.1.1.1", "AU", "", "", "cloudflare, inc.", false},
		{"9.9.9.9", "CH", "ZH", "Zurich", "quad9", true},
		{"240e:1::1", "CN", "", "", "telecom", false},
		{"2408:8000::1", "CN", "", "", "unicom", false},
		{"2409:8000::1", "CN", "", "", "mobile", false},
		{"2001:da8::6666", "CN", "BJ", "Beijing", "edu", true},
		{"2001:4860:4860::8888", "US", "", "", "google llc", false},
	}
	for _, tc := range tests {
		l := db.Lookup(netip.MustParseAddr(tc.addr))
		geo.DefaultCarriers().Apply(&l) // as the plugin does
		if l.Country != tc.country || l.Province != tc.province || l.City != tc.city || l.ISP != tc.isp || l.HasCoords != tc.coords || l.Source != geo.SourceDB {
			t.Errorf("Lookup(%s) = %+v", tc.addr, l)
		}
	}
	c, a := db.Info()[0], db.Info()[1]
	if c.DatabaseType != "GeoLite2-City" || a.DatabaseType != "GeoLite2-ASN" || c.BuildEpoch != BuildEpoch {
		t.Errorf("Info = %+v, %+v", c, a)
	}
}

func TestReadCSV(t *testing.T) {
	const header = "network,country,province,city,lat,lon,radius,asn,org\n"
	tests := []struct {
		name, in  string
		cities    []City
		asns      []ASN
		errSubstr string
	}{
		{"full", "# DEMO DATA\n" + header + "1.2.3.0/24, cn ,浙江,Hangzhou,30.27,120.16,20,AS4134,Chinanet\n",
			[]City{{Network: "1.2.3.0/24", Country: "CN", Province: "浙江", City: "Hangzhou", Lat: 30.27, Lon: 120.16, Radius: 20}},
			[]ASN{{Network: "1.2.3.0/24", ASN: 4134, Org: "Chinanet"}}, ""},
		{"city only", header + "1.2.3.0/24,US,,,,,,,\n", []City{{Network: "1.2.3.0/24", Country: "US"}}, nil, ""},
		{"asn only", header + "2409:8000::/20,,,,,,,9808,\n", nil, []ASN{{Network: "2409:8000::/20", ASN: 9808}}, ""},
		{"quoted org", header + "1.1.1.0/24,AU,,,,,,13335,\"Cloudflare, Inc.\"\n", []City{{Network: "1.1.1.0/24", Country: "AU"}},
			[]ASN{{Network: "1.1.1.0/24", ASN: 13335, Org: "Cloudflare, Inc."}}, ""},
		{"no header", "# only a comment\n", nil, nil, "no header"},
		{"bad header", "net,country,province,city,lat,lon,radius,asn,org\n", nil, nil, "header column 1"},
		{"bad lat", header + "1.2.3.0/24,CN,,,91,120,,,\n", nil, nil, ":2: lat"},
		{"bad lon", header + "1.2.3.0/24,CN,,,30,x,,,\n", nil, nil, ":2: lon"},
		{"bad radius", header + "1.2.3.0/24,CN,,,30,120,-1,,\n", nil, nil, ":2: radius"},
		{"bad asn", header + "1.2.3.0/24,CN,,,,,,ASX,\n", nil, nil, ":2: asn"},
		{"empty network", header + ",CN,,,,,,,\n", nil, nil, ":2: network"},
		{"field count", header + "1.2.3.0/24,CN\n", nil, nil, "fields"},
	}
	for _, tc := range tests {
		p := filepath.Join(t.TempDir(), "in.csv")
		if err := os.WriteFile(p, []byte(tc.in), 0o644); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		cities, asns, err := ReadCSV(p)
		if tc.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v, want one naming the file and %q", tc.name, err, tc.errSubstr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: ReadCSV: %v", tc.name, err)
		}
		if !equalSlices(cities, tc.cities) || !equalSlices(asns, tc.asns) {
			t.Errorf("%s: got %+v %+v, want %+v %+v", tc.name, cities, asns, tc.cities, tc.asns)
		}
	}
	if _, _, err := ReadCSV(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("Expected an error naming the missing file, got %v", err)
	}
}

func equalSlices[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bad network", WriteCity(filepath.Join(dir, "a"), []City{{Network: "1.2.3.0/33", Country: "CN"}}), "bad network"},
		{"mapped network", WriteCity(filepath.Join(dir, "b"), []City{{Network: "::ffff:1.2.3.0/120", Country: "CN"}}), "plain IPv4"},
		{"bad province", WriteCity(filepath.Join(dir, "c"), []City{{Network: "1.2.3.0/24", Country: "CN", Province: "Atlantis"}}), "province"},
		{"bad coords", WriteCity(filepath.Join(dir, "d"), []City{{Network: "1.2.3.0/24", Country: "CN", Lat: 100, Lon: 1}}), "coordinates"},
		{"reserved", WriteASN(filepath.Join(dir, "e"), []ASN{{Network: "10.0.0.0/8", ASN: 1}}), "10.0.0.0/8"},
		{"no dir", WriteASN(filepath.Join(dir, "nope", "f"), []ASN{{Network: "1.2.3.0/24", ASN: 1}}), "nope"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

// Inner networks win over the networks that contain them, whatever the input order.
func TestWriteNested(t *testing.T) {
	p := filepath.Join(t.TempDir(), "City.mmdb")
	err := WriteCity(p, []City{
		{Network: "1.2.3.0/24", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.2, Lon: 121.5, Radius: 10},
		{Network: "1.2.0.0/16", Country: "CN", Province: "ZJ", Lat: 29, Lon: 120, Radius: 100},
	})
	if err != nil {
		t.Fatalf("WriteCity: %v", err)
	}
	db, err := geo.Open(p, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	tests := []struct {
		addr, province string
		bits           uint8
	}{
		{"1.2.3.4", "SH", 24},
		{"::ffff:1.2.3.4", "SH", 24},
		// The tree splits the /16 around the /24; lookups report the leaf.
		{"1.2.4.4", "ZJ", 22},
		{"1.2.200.1", "ZJ", 17},
	}
	for _, tc := range tests {
		if l := db.Lookup(netip.MustParseAddr(tc.addr)); l.Province != tc.province || l.Bits != tc.bits {
			t.Errorf("Lookup(%s) = %+v, want province %s bits %d", tc.addr, l, tc.province, tc.bits)
		}
	}
}
