package test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// httpsMixNodes are Zhejiang nodes of each family, a vendor's cname node
// for Sichuan, and two probed Zhejiang nodes (one per family) behind a
// fallback; every record answers HTTPS.
func httpsMixNodes(p4, p6 string) string {
	probe := `{type: http, url: "%s", expect_body: ok, interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}`
	zj := "    country: CN\n    province: ZJ\n    isp: telecom\n    lat: 30.27\n    lon: 120.16\n"
	return `nodes:
  - id: zj-dual
    ipv4: [192.0.2.10]
    ipv6: ["2001:db8::10"]
` + zj + `  - id: zj-v4
    ipv4: [192.0.2.11]
` + zj + `  - id: zj-v6
    ipv6: ["2001:db8::12"]
` + zj + `  - id: zj-p4
    ipv4: [192.0.2.13]
` + zj + `    probe: ` + fmt.Sprintf(probe, p4) + `
  - id: zj-p6
    ipv6: ["2001:db8::14"]
` + zj + `    probe: ` + fmt.Sprintf(probe, p6) + `
  - id: vendor
    cname: edge.vendor.example.net.
    country: CN
    province: SC
    isp: telecom
records:
  - name: dual.example.org
    nodes: [zj-dual, vendor]
    https: {alpn: [h2, h3]}
  - name: v4.example.org
    nodes: [zj-v4, vendor]
    https: {alpn: [h2, h3]}
  - name: v6.example.org
    nodes: [zj-v6, vendor]
    https: {alpn: [h2, h3]}
  - name: only4.example.org
    nodes: [zj-v4]
    https: {alpn: [h2, h3]}
  - name: only6.example.org
    nodes: [zj-v6]
    https: {alpn: [h2, h3]}
  - name: fb.example.org
    nodes: [zj-p4, zj-p6]
    fallback: backup.vendor.example.net.
    https: {alpn: [h2, h3]}
`
}

// TestHTTPSKeepsEachFamily: an HTTPS answer never sends a family elsewhere
// than its own A/AAAA decision. Every mix of an own node, the cname node,
// the fallback and no node per family, through a real CoreDNS; gslb
// explain and /v1/explain give the same record.
func TestHTTPSKeepsEachFamily(t *testing.T) {
	const zj, sc = "202.101.172.0/24", "61.139.2.0/24"
	p4, p6 := newProbeTarget(t), newProbeTarget(t)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", httpsMixNodes(p4.url(), p6.url()))
	admin := testsupport.FreeAddr(t)
	text := gslbCorefile(t, nodes, "cooldown 0s\nadmin "+admin)
	conf := writeFile(t, dir, "Corefile", text)
	s := startServer(t, text)
	e := &adminEnv{addr: admin, s: s}

	const svc = "1 . alpn=\"h2,h3\""
	cases := []struct {
		mix, name, client, want string
	}{
		{"own/own", "dual", zj, svc + ` ipv4hint="192.0.2.10" ipv6hint="2001:db8::10"`},
		{"own/cname", "v4", zj, svc + ` ipv4hint="192.0.2.11"`},
		{"cname/own", "v6", zj, svc + ` ipv6hint="2001:db8::12"`},
		{"cname/cname", "v4", sc, "0 edge.vendor.example.net."},
		{"cname/cname", "dual", sc, "0 edge.vendor.example.net."},
		{"own/none", "only4", zj, svc + ` ipv4hint="192.0.2.11"`},
		{"none/own", "only6", zj, svc + ` ipv6hint="2001:db8::12"`},
		{"own/own probed", "fb", zj, svc + ` ipv4hint="192.0.2.13" ipv6hint="2001:db8::14"`},
	}
	for _, c := range cases {
		name := c.name + ".example.org"
		got := httpsRData(t, ask(t, s, name, dns.TypeHTTPS, c.client))
		if got != c.want {
			t.Errorf("%s: HTTPS %s for %s: %q, want %q", c.mix, name, c.client, got, c.want)
		}
		stdout, stderr, code := runTool(t, "explain", "-conf", conf, "-json", c.client, name, "HTTPS")
		if x := explainedRecord(t, stdout); code != 0 || x != httpsRecord(name, got) {
			t.Errorf("%s: gslb explain %s %s: exit %d, record %q, server %q\n%s", c.mix, c.client, name, code, x, got, stderr)
		}
		if x := apiRecord(t, e, c.client, name); x != httpsRecord(name, got) {
			t.Errorf("%s: /v1/explain %s %s: record %q, server %q", c.mix, c.client, name, x, got)
		}
	}
	// The family that goes to the vendor still gets its CNAME.
	if r := ask(t, s, "v4.example.org", dns.TypeAAAA, zj); len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeCNAME {
		t.Errorf("AAAA v4.example.org for Zhejiang: %s, want the vendor's CNAME", r)
	}

	// The AAAA node down: that family falls back, the A one keeps its node.
	p6.mode.Store(target503)
	waitHTTPS(t, s, e, "fb.example.org", zj, svc+` ipv4hint="192.0.2.13"`)
	if r := ask(t, s, "fb.example.org", dns.TypeAAAA, zj); len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeCNAME {
		t.Errorf("AAAA fb.example.org with its node down: %s, want the fallback CNAME", r)
	}
	// Both down: both fall back, AliasMode to the fallback.
	p4.mode.Store(target503)
	waitHTTPS(t, s, e, "fb.example.org", zj, "0 backup.vendor.example.net.")
	// The A node back, the AAAA one down: ServiceMode with the A hint only.
	p4.mode.Store(targetOK)
	waitHTTPS(t, s, e, "fb.example.org", zj, svc+` ipv4hint="192.0.2.13"`)
}

// waitHTTPS waits until the server's HTTPS answer for client is want and
// checks that /v1/explain says the same.
func waitHTTPS(t *testing.T, s *server, e *adminEnv, name, client, want string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("HTTPS %s %s", name, want), func() (bool, string) {
		got := httpsRData(t, ask(t, s, name, dns.TypeHTTPS, client))
		return got == want, got
	})
	if x := apiRecord(t, e, client, name); x != httpsRecord(name, want) {
		t.Errorf("/v1/explain %s %s: record %q, server %q", client, name, x, want)
	}
}

// httpsRData is the priority, target and params of r's one HTTPS record.
func httpsRData(t *testing.T, r *dns.Msg) string {
	t.Helper()
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("HTTPS: %s, want one record", r)
	}
	h, ok := r.Answer[0].(*dns.HTTPS)
	if !ok {
		t.Fatalf("HTTPS: %s, want an HTTPS record", r)
	}
	hdr := h.Hdr.String()
	return strings.TrimSpace(strings.TrimPrefix(h.String(), hdr))
}

// httpsRecord is the presentation form explain gives for rdata with the
// server's TTL left out.
func httpsRecord(name, rdata string) string { return name + ". HTTPS " + rdata }

// explainedRecord is the HTTPS record of explain -json output, without
// its TTL and class.
func explainedRecord(t *testing.T, out string) string {
	t.Helper()
	var x struct{ HTTPS *struct{ Record string } }
	if err := json.Unmarshal([]byte(out), &x); err != nil || x.HTTPS == nil {
		t.Fatalf("Explain output: %v\n%s", err, out)
	}
	rr, err := dns.NewRR(x.HTTPS.Record)
	if err != nil {
		t.Fatalf("Explained record %q: %v", x.HTTPS.Record, err)
	}
	return rr.Header().Name + " HTTPS " + strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}

// apiRecord is /v1/explain's HTTPS record for client and name.
func apiRecord(t *testing.T, e *adminEnv, client, name string) string {
	t.Helper()
	code, body := e.call(t, "GET", "/v1/explain?addr="+url.QueryEscape(client)+"&name="+name+"&type=HTTPS", "", "")
	if code != 200 {
		t.Fatalf("GET /v1/explain: %d %s", code, body)
	}
	return explainedRecord(t, body)
}
