package testsupport

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo/mmdbgen"
)

// FixtureNodes is a node table for the handler tests: two equal nodes in
// Zhejiang (a tie), one in Shanghai, one in Beijing, IPv6 only in Beijing.
const FixtureNodes = `
nodes:
  - {id: hz-a, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-b, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj, ipv4: [192.0.2.4], ipv6: ["2001:db8::4"], country: CN, province: BJ, isp: unicom, lat: 39.9, lon: 116.4}
records:
  - name: www.example.org
  - name: sh.example.org
    ttl: 30
    nodes: [sh]
  - name: v6.example.org
    nodes: [bj]
`

// Fixture writes City and ASN databases and a node table into a temp dir.
// Networks: 1.0.0.0/16 Zhejiang (AS4134 /24 inside), 2.0.0.0/24 Shanghai,
// 3.0.0.0/8 China without province, 2400::/32 Beijing.
func Fixture(t testing.TB, nodes string) (dir string) {
	t.Helper()
	dir = t.TempDir()
	cities := []mmdbgen.City{
		{Network: "1.0.0.0/16", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16, Radius: 20},
		{Network: "2.0.0.0/24", Country: "CN", Province: "SH", City: "Shanghai", Lat: 31.23, Lon: 121.47, Radius: 20},
		{Network: "3.0.0.0/8", Country: "CN", Lat: 34.77, Lon: 113.72, Radius: 1000},
		{Network: "2400::/32", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4, Radius: 50},
	}
	asns := []mmdbgen.ASN{
		{Network: "1.0.1.0/24", ASN: 4134, Org: "Chinanet"},
		{Network: "2.0.0.0/24", ASN: 4812, Org: "China Telecom Group"},
	}
	WriteDBs(t, dir, cities, asns)
	if err := os.WriteFile(filepath.Join(dir, "nodes.yaml"), []byte(nodes), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
