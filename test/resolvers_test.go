package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/testunbound"

	"github.com/miekg/dns"
)

const resolverNodes = `nodes:
  - {id: jx, ipv4: [192.0.2.1], country: CN, province: JX, isp: telecom, lat: 28.68, lon: 115.86}
  - {id: sh, ipv4: [192.0.2.2], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bcn, ipv4: [192.0.2.9], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
    nodes: [jx, sh]
    ttl: 30
  - name: b.example.org
    nodes: [bcn]
`

// secretFile writes a token or key file, mode 0600 as gslb wants them.
func secretFile(t *testing.T, dir, name, secret string) string {
	t.Helper()
	p := writeFile(t, dir, name, secret+"\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// adminDo sends a request to an admin API with token, and decodes its
// JSON answer into v; a status other than 200 is an error.
func adminDo(method, admin, path, token string, body []byte, v any) error {
	req, _ := http.NewRequest(method, "http://"+admin+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// resolversBlock is the gslb block of the resolver tests: an admin API,
// the beacon edge's feed source, and the resolvers block with lines.
func resolversBlock(admin, adminTokenFile, edgeTokenFile, keyFile, lines string) string {
	return fmt.Sprintf(`        admin %s {
            token_file %s
        }
        feed {
            source bcn-edge {
                token_file %s
                nodes bcn
            }
        }
        resolvers {
            beacon b.example.org
            key_file %s
            cycle 200ms
            min_samples 10
%s        }
`, admin, adminTokenFile, edgeTokenFile, keyFile, lines)
}

// A resolver that sends no ECS, end to end through real processes: a
// real unbound (no ECS: it has no subnetcache module) in front of a real
// CoreDNS, placed in Shanghai by an override of the address it queries
// from. A client script resolves fresh beacon names through it and
// fetches them from a real nginx with X-Forwarded-For addresses of
// Jiangxi telecom /24s; the edge agent ships nginx's log. After the
// beacons unbound's queries for www get the Jiangxi node, not the Shanghai
// one; a CoreDNS with `population off` answers Shanghai.
func TestResolverPopulationThroughUnbound(t *testing.T) {
	nginxBin := nginxPath(t)
	dir := t.TempDir()
	// 59.52.0.0/14: Jiangxi telecom; 101.80.0.0/12: Shanghai telecom.
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "59.52.0.0/14", Country: "CN", Province: "JX", Lat: 28.68, Lon: 115.86, Radius: 50},
		{Network: "101.80.0.0/12", Country: "CN", Province: "SH", Lat: 31.23, Lon: 121.47, Radius: 50},
	}, []mmdbgen.ASN{{Network: "59.52.0.0/14", ASN: 4134, Org: "Chinanet"}, {Network: "101.80.0.0/12", ASN: 4812, Org: "China Telecom Shanghai"}})
	nodes := writeFile(t, dir, "nodes.yaml", resolverNodes)
	secret := func(name, tok string) string { return secretFile(t, dir, name, tok) }
	adminToken, edgeToken := "s3cret-token-for-tests", "bcn-edge-token-5f1c9a7e3b2d4068"
	adminTokenFile, edgeTokenFile := secret("admin.token", adminToken), secret("edge.token", edgeToken)
	keyFile := secret("beacon.key", "beacon-key-0123456789abcdef")
	// unbound asks from 127.0.0.3 (the one with population) and 127.0.0.4:
	// both are "in Shanghai".
	over := writeFile(t, dir, "overrides.yaml", `overrides:
  - cidrs: [127.0.0.3/32, 127.0.0.4/32]
    location: {country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
`)
	corefile := func(admin, population string) string {
		return fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    gslb {
        geoip %s
        asn %s
        nodes %s
        overrides %s
%s    }
}
`, strings.Split(testsupport.FreeAddr(t), ":")[1], city, asn, nodes, over, resolversBlock(admin, adminTokenFile, edgeTokenFile, keyFile, "            population "+population+"\n"))
	}
	admin, adminOff := testsupport.FreeAddr(t), testsupport.FreeAddr(t)
	confOn, confOff := writeFile(t, dir, "Corefile", corefile(admin, "on")), writeFile(t, dir, "Corefile.off", corefile(adminOff, "off"))
	startProc(t, "coredns", corednsTool(t), "-conf", confOn)
	startProc(t, "coredns (population off)", corednsTool(t), "-conf", confOff)
	get := func(admin, path string, v any) error { return adminDo("GET", admin, path, adminToken, nil, v) }
	dnsAddr := func(conf string) string {
		data, _ := os.ReadFile(conf)
		port := strings.TrimSuffix(strings.Fields(string(data))[0], "{")
		return "127.0.0.1:" + strings.Split(port, ":")[1]
	}
	var res struct{}
	for _, a := range []string{admin, adminOff} {
		testsupport.WaitFor(t, "CoreDNS's admin API", func() (bool, string) {
			err := get(a, "/v1/resolvers", &res)
			return err == nil, fmt.Sprint(err)
		})
	}
	ub := testunbound.StartFrom(t, "example.org.", nil, dnsAddr(confOn), "127.0.0.3")
	ubOff := testunbound.StartFrom(t, "example.org.", nil, dnsAddr(confOff), "127.0.0.4")

	// nginx serves the beacon names, its log has their Host.
	log := filepath.Join(dir, "access.log")
	web, _ := startNginx(t, nginxBin, dir, log, "return 204;", 1)
	testsupport.WaitFor(t, "nginx", func() (bool, string) {
		resp, err := http.Get("http://" + web + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil, fmt.Sprint(err)
	})
	startProc(t, "gslb feed", gslbTool(t), "feed", "-log", log, "-url", "http://"+admin+"/v1/feed", "-token-file", edgeTokenFile,
		"-node", "bcn", "-interval", "300ms", "-beacon", "b.example.org")
	time.Sleep(500 * time.Millisecond) // the agent opens the log at its end

	ask := func(server, name string) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		c := &dns.Client{Timeout: 5 * time.Second}
		r, _, err := c.Exchange(m, server)
		return r, err
	}
	answer := func(server string) string {
		r, err := ask(server, "www.example.org.")
		if err != nil || len(r.Answer) == 0 {
			return fmt.Sprintf("no answer: %v %v", err, r)
		}
		return r.Answer[0].(*dns.A).A.String()
	}
	// The client script: 30 fresh beacon names, each resolved through
	// unbound and fetched by a Jiangxi client.
	var minted struct {
		Names []string `json:"names"`
		TTL   uint32   `json:"ttl"`
	}
	if err := get(admin, "/v1/beacons?n=30", &minted); err != nil || len(minted.Names) != 30 {
		t.Fatalf("GET /v1/beacons: %v %v", minted, err)
	}
	for i, name := range minted.Names {
		r, err := ask(ub, dns.Fqdn(name))
		if err != nil || len(r.Answer) == 0 || r.Answer[0].(*dns.A).A.String() != "192.0.2.9" {
			t.Fatalf("Beacon %s through unbound: %v %v", name, r, err)
		}
		if i == 0 && r.Answer[0].Header().Ttl > minted.TTL {
			t.Errorf("A beacon's ttl %d, want at most %d", r.Answer[0].Header().Ttl, minted.TTL)
		}
		req, _ := http.NewRequest("GET", "http://"+web+"/", nil)
		req.Host = name
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("59.%d.%d.%d", 52+i%4, i, 10+i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var obs struct {
		Resolvers []struct {
			Resolver   string
			Deciding   bool
			Beacons    int
			Population []struct{ Province, ISP string }
		}
		Beacons map[string]int
	}
	testsupport.WaitFor(t, "the beacons to join unbound's population", func() (bool, string) {
		err := get(admin, "/v1/resolvers", &obs)
		for _, r := range obs.Resolvers {
			if r.Resolver == "127.0.0.3" && r.Deciding && r.Beacons == 30 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v %v", obs, err)
	})
	var x struct {
		Population *struct {
			Resolver string  `json:"resolver"`
			Place    string  `json:"place"`
			Samples  float64 `json:"samples"`
		} `json:"population"`
		Node string `json:"node"`
	}
	// The population decides from the next cycle's snapshot on.
	testsupport.WaitFor(t, "explain to show unbound's population", func() (bool, string) {
		err := get(admin, "/v1/explain?addr=127.0.0.3&name=www.example.org", &x)
		return err == nil && x.Population != nil, fmt.Sprintf("%+v %v", x, err)
	})
	if x.Population.Place != "JX telecom" || x.Population.Samples != 30 || x.Node != "jx" {
		t.Errorf("Explain for unbound's address: population %+v, node %s; want 30 clients in JX telecom, node jx", x.Population, x.Node)
	}
	if got := answer(ub); got != "192.0.2.1" {
		t.Errorf("Through unbound after the beacons www is %s, want the Jiangxi node 192.0.2.1", got)
	}
	if got := answer(ubOff); got != "192.0.2.2" {
		t.Errorf("With population off www is %s, want the Shanghai node 192.0.2.2", got)
	}
	t.Logf("Beacons %v; unbound's population %+v", obs.Beacons, x.Population)
}
