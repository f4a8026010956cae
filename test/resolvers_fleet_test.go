package test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// In a fleet a resolver asks one member for its beacon names and the edge
// reports the fetches to another: through the fleet's stream on a real
// redis-server both members learn the population, and both decide the
// resolver's queries for it.
func TestResolverPopulationFleet(t *testing.T) {
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "59.52.0.0/14", Country: "CN", Province: "JX", Lat: 28.68, Lon: 115.86, Radius: 50},
	}, []mmdbgen.ASN{{Network: "59.52.0.0/14", ASN: 4134, Org: "Chinanet"}})
	nodes := writeFile(t, dir, "nodes.yaml", resolverNodes)
	secret := func(name, tok string) string { return secretFile(t, dir, name, tok) }
	adminToken, edgeToken := "s3cret-token-for-tests", "bcn-edge-token-5f1c9a7e3b2d4068"
	adminTokenFile, edgeTokenFile := secret("admin.token", adminToken), secret("edge.token", edgeToken)
	keyFile := secret("beacon.key", "beacon-key-0123456789abcdef")
	over := writeFile(t, dir, "overrides.yaml", `overrides:
  - cidr: 127.0.0.1/32
    location: {country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
`)
	rdb := testredis.Start(t)
	corefile := func(member, admin, port string) string {
		return fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    gslb {
        geoip %s
        asn %s
        nodes %s
        overrides %s
%s        redis %s {
            timeout 250ms
        }
        fleet beacons {
            member %s
            vantage telecom SH
        }
    }
}
`, port, city, asn, nodes, over, resolversBlock(admin, adminTokenFile, edgeTokenFile, keyFile, ""), rdb.Addr(), member)
	}
	adminA, adminB := testsupport.FreeAddr(t), testsupport.FreeAddr(t)
	dnsA := testsupport.FreeAddr(t)
	startProc(t, "coredns a", corednsTool(t), "-conf", writeFile(t, dir, "Corefile.a", corefile("a", adminA, strings.Split(dnsA, ":")[1])))
	startProc(t, "coredns b", corednsTool(t), "-conf", writeFile(t, dir, "Corefile.b", corefile("b", adminB, strings.Split(testsupport.FreeAddr(t), ":")[1])))
	do := adminDo
	var any struct{}
	for _, a := range []string{adminA, adminB} {
		testsupport.WaitFor(t, "CoreDNS's admin API", func() (bool, string) {
			err := do("GET", a, "/v1/resolvers", adminToken, nil, &any)
			return err == nil, fmt.Sprint(err)
		})
	}
	var minted struct{ Names []string }
	if err := do("GET", adminB, "/v1/beacons?n=20", adminToken, nil, &minted); err != nil {
		t.Fatal(err)
	}
	// The resolver (127.0.0.1) asks a; the edge reports to b.
	var body bytes.Buffer
	for i, name := range minted.Names {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeA)
		if r, err := dns.Exchange(m, dnsA); err != nil || len(r.Answer) == 0 {
			t.Fatalf("Beacon %s from a: %v %v", name, r, err)
		}
		label, _, _ := strings.Cut(name, ".")
		fmt.Fprintf(&body, `{"label": %q, "client": "59.%d.%d.0/24"}`+"\n", label, 52+i%4, i)
	}
	var got map[string]int
	if err := do("POST", adminB, "/v1/beacons", edgeToken, body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// b may have a's queries already, or not yet: then the reports wait.
	if got["joined"]+got["pending"] != 20 {
		t.Errorf("b answered the reports %v, want 20 joined or pending", got)
	}
	for _, a := range []string{adminA, adminB} {
		var x struct {
			Population *struct{ Place string }
			Node       string
		}
		testsupport.WaitFor(t, "the population on "+a, func() (bool, string) {
			err := do("GET", a, "/v1/explain?addr=127.0.0.1&name=www.example.org", adminToken, nil, &x)
			return err == nil && x.Population != nil && x.Node == "jx", fmt.Sprintf("%+v %v", x, err)
		})
	}
	t.Logf("b answered the reports: %v; both members decide 127.0.0.1's queries for its population", got)
}
