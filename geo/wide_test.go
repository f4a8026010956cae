package geo_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// Adjacent networks that place clients alike (the city's name aside) merge
// at load time: an address's Bits is the largest aligned supernet inside
// its run, bounded by the ASN database's runs; a gap or another place ends
// a run.
func TestWideNetworks(t *testing.T) {
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	zj := mmdbgen.City{Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50}
	for i := range 256 {
		c := zj
		c.Network, c.City = fmt.Sprintf("36.0.%d.0/24", i), []string{"Hangzhou", "Xihu"}[i%2]
		cities = append(cities, c)
		c.Network, c.City = fmt.Sprintf("36.1.%d.0/24", i), "Hangzhou"
		if i == 128 {
			c.Province, c.Lat, c.Lon = "SH", 31.23, 121.47
		}
		cities = append(cities, c)
	}
	c := zj
	c.Network = "36.2.0.0/24"
	cities = append(cities, c)
	c.Network = "36.2.2.0/24" // 36.2.1.0/24 is a gap
	cities = append(cities, c)
	asns = append(asns, mmdbgen.ASN{Network: "36.0.0.0/17", ASN: 4134, Org: "Chinanet"}, mmdbgen.ASN{Network: "36.0.128.0/17", ASN: 4134, Org: "Chinanet"},
		mmdbgen.ASN{Network: "36.1.0.0/18", ASN: 4134, Org: "Chinanet"}, mmdbgen.ASN{Network: "36.1.64.0/18", ASN: 4812, Org: "China Telecom Group"})
	dir := t.TempDir()
	cityPath, asnPath := filepath.Join(dir, "c.mmdb"), filepath.Join(dir, "a.mmdb")
	if err := mmdbgen.WriteCity(cityPath, cities); err != nil {
		t.Fatal(err)
	}
	if err := mmdbgen.WriteASN(asnPath, asns); err != nil {
		t.Fatal(err)
	}
	db, err := geo.Open(cityPath, asnPath)
	if err != nil {
		t.Fatal(err)
	}
	cityOnly, err := geo.Open(cityPath, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr           string
		bits, cityBits uint8
	}{
		{"36.0.5.1", 16, 16},     // 256 /24s of one place, two city names
		{"36.1.5.1", 18, 17},     // up to the other province at 36.1.128.0/24; the ASN ends at /18
		{"36.1.128.1", 24, 24},   // the other province
		{"36.1.200.1", 18, 18},   // 36.1.192.0/18 is the widest aligned inside 36.1.129-255
		{"36.1.129.1", 24, 24},   // 36.1.129.0/24: its /23 would take in 36.1.128.0/24
		{"36.2.0.1", 24, 24},     // a gap ends the run
		{"36.2.2.1", 24, 24},     //
		{"36.0.255.255", 16, 16}, //
	} {
		a := netip.MustParseAddr(tc.addr)
		if l := db.Lookup(a); l.Bits != tc.bits || l.Province == "" {
			t.Errorf("%s: bits %d (%s), want %d", tc.addr, l.Bits, l.Province, tc.bits)
		}
		if l := cityOnly.Lookup(a); l.Bits != tc.cityBits {
			t.Errorf("%s, City only: bits %d, want %d", tc.addr, l.Bits, tc.cityBits)
		}
	}
}

// Over thousands of /24s of random places, a widened network never holds
// an address placed otherwise.
func TestWideNetworksNeverMix(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	provs := []string{"ZJ", "SH", "JS"}
	var cities []mmdbgen.City
	for i := range 4096 {
		if r.IntN(20) == 0 {
			continue // a gap
		}
		p := provs[min(r.IntN(40), 2)%3]
		if r.IntN(3) == 0 {
			p = provs[(i/64)%3]
		}
		cities = append(cities, mmdbgen.City{Network: fmt.Sprintf("36.%d.%d.0/24", 16+i/256, i%256), Country: "CN", Province: p})
	}
	path := filepath.Join(t.TempDir(), "c.mmdb")
	if err := mmdbgen.WriteCity(path, cities); err != nil {
		t.Fatal(err)
	}
	db, err := geo.Open(path, "")
	if err != nil {
		t.Fatal(err)
	}
	wider := 0
	for i := range 4096 {
		a := netip.AddrFrom4([4]byte{36, byte(16 + i/256), byte(i % 256), 9})
		l := db.Lookup(a)
		p, _ := a.Prefix(int(l.Bits))
		if l.Bits < 24 {
			wider++
		}
		for k := 0; k < 1<<(24-min(l.Bits, 24)); k++ {
			b := p.Addr().As4()
			n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 + uint32(k)<<8
			o := db.Lookup(netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), 1}))
			if o.Province != l.Province || o.Country != l.Country {
				t.Fatalf("%s/%d (%s) holds %d.%d.%d.1 in %s", a, l.Bits, l.Province, byte(n>>24), byte(n>>16), byte(n>>8), o.Province)
			}
		}
	}
	if wider == 0 {
		t.Error("No network widened")
	}
	t.Logf("%d of 4096 /24s widened", wider)
}

// An IPIP.net database's adjacent networks of one province and carrier
// merge too (city names aside); MaxMind's networks still bound the scope.
func TestWideNetworksIPDB(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "36.0.0.0/12", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	}, []mmdbgen.ASN{{Network: "36.0.0.0/12", ASN: 4134, Org: "Chinanet"}})
	var rows []testsupport.IPDBRow
	for i := range 64 {
		row := testsupport.IPDBRow{Network: fmt.Sprintf("36.0.%d.0/24", i), CountryName: "中国", RegionName: "浙江", CityName: []string{"杭州", "宁波"}[i%2], ISP: "电信", CCode: "CN"}
		if i == 40 {
			row.ISP = "联通"
		}
		rows = append(rows, row)
	}
	ip := testsupport.WriteIPDB(t, dir, rows)
	db, err := geo.OpenFiles(geo.Files{"city": {city}, "asn": {asn}, "ipdb": {ip}})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]uint8{"36.0.5.1": 19, "36.0.33.1": 21, "36.0.40.1": 24, "36.0.41.1": 24, "36.0.48.1": 20} {
		if l := db.Lookup(netip.MustParseAddr(addr)); l.Bits != want || l.Province != "ZJ" {
			t.Errorf("%s: bits %d (%s), want %d", addr, l.Bits, l.Province, want)
		}
	}
}

// A place's networks are hashed by the spread on units as wide as its
// size allows (Location.SpreadBits): whole when it has networks enough to
// count SpreadUnits units, cut just enough when it has fewer, and to
// spread_prefix (0) when it has too few networks or another database
// places the address in a small place.
func TestSpreadUnits(t *testing.T) {
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	add := func(network, prov string, asn uint32) {
		cities = append(cities, mmdbgen.City{Network: network, Country: "CN", Province: prov, City: prov, Lat: 30, Lon: 120})
		asns = append(asns, mmdbgen.ASN{Network: network, ASN: asn, Org: fmt.Sprint("AS", asn)})
	}
	// Every other /16: the gaps keep them apart.
	for i := range 200 {
		add(fmt.Sprintf("%d.%d.0.0/16", 58+i/128, 2*(i%128)), "ZJ", 4134)
	}
	for i := range 20 {
		add(fmt.Sprintf("61.%d.0.0/16", 2*i), "SH", 4812)
	}
	add("62.0.0.0/12", "AH", 4134)
	add("63.0.0.0/16", "ZJ", 64500) // a place of one network in the ASN database
	dir := t.TempDir()
	cityPath, asnPath := filepath.Join(dir, "c.mmdb"), filepath.Join(dir, "a.mmdb")
	if err := mmdbgen.WriteCity(cityPath, cities); err != nil {
		t.Fatal(err)
	}
	if err := mmdbgen.WriteASN(asnPath, asns); err != nil {
		t.Fatal(err)
	}
	db, err := geo.Open(cityPath, asnPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		bits uint8
	}{
		// 200 /16s count 200 units, but AS4134 holds the /12 as well: cut
		// to /13 the place counts 142.
		{"58.4.1.1", 13},
		{"59.2.1.1", 13},
		{"61.2.1.1", 19}, // 20 /16s count 128 units of /19
		{"62.1.1.1", 0},  // one network: spread_prefix
		{"63.0.1.1", 0},  // a large place in the City database, a small one in the ASN's
		{"58.1.1.1", 0},  // a gap
	} {
		if got := db.Lookup(netip.MustParseAddr(tc.addr)).SpreadBits; got != tc.bits {
			t.Errorf("%s: SpreadBits %d, want %d", tc.addr, got, tc.bits)
		}
	}
	cityOnly, err := geo.Open(cityPath, "")
	if err != nil {
		t.Fatal(err)
	}
	// The City database alone: ZJ's 201 /16s count 201 units, whole.
	if got := cityOnly.Lookup(netip.MustParseAddr("58.4.1.1")).SpreadBits; got != 1 {
		t.Errorf("City database alone: SpreadBits %d, want 1", got)
	}
}
