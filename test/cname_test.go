package test

import (
	"encoding/json"
	"testing"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// hybridNodes are own nodes in Zhejiang and Beijing and a vendor CDN's
// edge, a cname node without coordinates, for Sichuan.
const hybridNodes = `nodes:
  - id: hz-telecom
    ipv4: [192.0.2.10]
    ipv6: ["2001:db8::10"]
    country: CN
    province: ZJ
    isp: telecom
    lat: 30.27
    lon: 120.16
  - id: bj-unicom
    ipv4: [198.51.100.10]
    ipv6: ["2001:db8::30"]
    country: CN
    province: BJ
    isp: unicom
    lat: 39.90
    lon: 116.41
  - id: vendor-sc
    cname: edge.vendor-cdn.example.
    country: CN
    province: SC
    isp: telecom
records:
  - name: www.example.org
    ttl: 40
`

// TestCNAMENode: the ladder picks the cname node for a Sichuan client,
// which gets the CNAME alone (also with answers 2, and for AAAA) with the
// record's ttl and the ECS scope; a Zhejiang client gets its address;
// explain shows the CNAME.
func TestCNAMENode(t *testing.T) {
	nodes := writeFile(t, t.TempDir(), "nodes.yaml", hybridNodes)
	admin := testsupport.FreeAddr(t)
	s := startServer(t, gslbCorefile(t, nodes, "answers 2\nadmin "+admin))
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		q := newQuery(t, "www.example.org", qtype, "61.139.2.0/24")
		r := exchange(t, "udp", s.addr("udp"), q)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s for Sichuan: %s, want one CNAME", dns.TypeToString[qtype], r)
		}
		c, ok := r.Answer[0].(*dns.CNAME)
		if !ok || c.Target != "edge.vendor-cdn.example." || c.Hdr.Ttl != 40 || c.Hdr.Name != "www.example.org." {
			t.Errorf("%s for Sichuan: %s, want www.example.org. 40 CNAME edge.vendor-cdn.example.", dns.TypeToString[qtype], r.Answer[0])
		}
		checkReplyECS(t, q, r, 24)
	}
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "202.101.172.0/24")); got != "192.0.2.10,198.51.100.10" {
		t.Errorf("A for Zhejiang: %q, want own nodes only, hz first", got)
	}

	e := &adminEnv{addr: admin, s: s}
	code, body := e.call(t, "GET", "/v1/explain?addr=61.139.2.0/24&name=www.example.org&type=A", "", "")
	var x struct {
		Node   string `json:"node"`
		Answer []struct {
			Node, CNAME string
		} `json:"answer"`
	}
	if err := json.Unmarshal([]byte(body), &x); code != 200 || err != nil {
		t.Fatalf("GET /v1/explain: %d %v %s", code, err, body)
	}
	if x.Node != "vendor-sc" || len(x.Answer) != 1 || x.Answer[0].CNAME != "edge.vendor-cdn.example." {
		t.Errorf("explain: %s, want vendor-sc answering its CNAME", body)
	}
}
