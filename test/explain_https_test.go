package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// httpsTable is toolNodes with https on www.example.org.
var httpsTable = strings.Replace(toolNodes, "  - name: www.example.org\n", "  - name: www.example.org\n    https: {alpn: [h2, h3], port: 443}\n", 1)

type explainedHTTPS struct {
	explained
	Type       string
	TTLReason  string `json:"ttl_reason"`
	Candidates []struct{ ID string }
	HTTPS      *struct {
		Record  string
		Mode    string
		A, AAAA *explained
	}
	Answer []struct{ Node, Address, CNAME string }
}

// explainAll runs gslb explain -json for each client, four at a time.
func explainAll(t *testing.T, conf, name, qtype string, clients []string) []explainedHTTPS {
	t.Helper()
	out := make([]explainedHTTPS, len(clients))
	errs := make([]string, len(clients))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				stdout, stderr, code := runTool(t, "explain", "-conf", conf, "-json", clients[i], name, qtype)
				if code != 0 {
					errs[i] = fmt.Sprintf("exit %d: %s", code, stderr)
				} else if err := json.Unmarshal([]byte(stdout), &out[i]); err != nil {
					errs[i] = fmt.Sprintf("%v\n%s", err, stdout)
				}
			}
		})
	}
	for i := range clients {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Fatalf("explain %s %s %s: %s", clients[i], name, qtype, e)
		}
	}
	return out
}

// hints are an HTTPS answer's ipv4hint and ipv6hint addresses, in order.
func hints(rr *dns.HTTPS) []string {
	var out []string
	for _, kv := range rr.Value {
		switch kv := kv.(type) {
		case *dns.SVCBIPv4Hint:
			for _, ip := range kv.Hint {
				out = append(out, ip.String())
			}
		case *dns.SVCBIPv6Hint:
			for _, ip := range kv.Hint {
				out = append(out, ip.String())
			}
		}
	}
	return out
}

// TestExplainHTTPSMatchesServer: for a few hundred client subnets, gslb
// explain's HTTPS decision is the HTTPS answer a real CoreDNS running the
// same Corefile gives: the same record (hints, SvcParams, TTL), scope and
// rcode, with the A and AAAA decisions it comes from; a record without
// https is NODATA; a cname winner gives the AliasMode record.
func TestExplainHTTPSMatchesServer(t *testing.T) {
	_, conf, text := toolSetup(t, httpsTable, "spread 0.1\nanswers 2")
	s := startServer(t, text)
	clients := toolClients(200)
	for i := range 4 {
		clients = append(clients, fmt.Sprintf("::ffff:1.%d.%d.0/120", 1+i, 9*i))
	}
	xs := explainAll(t, conf, "www.example.org", "HTTPS", clients)
	mixed := 0
	for i, c := range clients {
		x := xs[i]
		r := ask(t, s, "www.example.org", dns.TypeHTTPS, c)
		if x.Type != "HTTPS" || x.HTTPS == nil || x.HTTPS.A == nil || x.HTTPS.AAAA == nil {
			t.Fatalf("%s: explain's HTTPS decision lacks its parts: %+v", c, x)
		}
		if x.Rcode != dns.RcodeToString[r.Rcode] {
			t.Errorf("%s: explain rcode %s, CoreDNS %s", c, x.Rcode, dns.RcodeToString[r.Rcode])
		}
		want := ""
		if len(r.Answer) == 1 {
			want = r.Answer[0].String()
		}
		if x.HTTPS.Record != want {
			t.Errorf("%s: explain answers %q (A %s, AAAA %s), CoreDNS %q", c, x.HTTPS.Record, x.HTTPS.A.Node, x.HTTPS.AAAA.Node, want)
			continue
		}
		if e := replyECS(r); e == nil || x.Scope == nil || *x.Scope != e.SourceScope {
			t.Errorf("%s: explain scope %v, CoreDNS %v", c, x.Scope, e)
		}
		if want == "" {
			continue
		}
		h := r.Answer[0].(*dns.HTTPS)
		var got []string
		for _, a := range x.Answer {
			got = append(got, a.Address)
		}
		if !slicesEqual(got, hints(h)) || x.TTL != h.Hdr.Ttl || x.HTTPS.Mode != "service" {
			t.Errorf("%s: explain's answer %v TTL %d mode %s, CoreDNS's hints %v TTL %d", c, got, x.TTL, x.HTTPS.Mode, hints(h), h.Hdr.Ttl)
		}
		// The parts are the A and AAAA decisions the server makes.
		if a := strings.Join(inOrder(ask(t, s, "www.example.org", dns.TypeA, c)), ","); a != addresses(x.HTTPS.A) {
			t.Errorf("%s: explain's A part %s, CoreDNS's A answer %s", c, addresses(x.HTTPS.A), a)
		}
		if a := strings.Join(inOrder(ask(t, s, "www.example.org", dns.TypeAAAA, c)), ","); a != addresses(x.HTTPS.AAAA) {
			t.Errorf("%s: explain's AAAA part %s, CoreDNS's AAAA answer %s", c, addresses(x.HTTPS.AAAA), a)
		}
		if x.Node != x.HTTPS.A.Node || x.Tier != x.HTTPS.A.Tier {
			t.Errorf("%s: counted as %s/%s, want the A decision's %s/%s", c, x.Node, x.Tier, x.HTTPS.A.Node, x.HTTPS.A.Tier)
		}
		if x.HTTPS.A.Node != x.HTTPS.AAAA.Node {
			mixed++
		}
	}
	// Some clients get hints of two nodes, so the comparison means something.
	if mixed == 0 {
		t.Errorf("Expected some clients whose A and AAAA winners differ")
	}

	// The text report prints the record as the server answers it.
	c := "1.3.7.0/24"
	out, _, code := runTool(t, "explain", "-conf", conf, c, "www.example.org", "https")
	r := ask(t, s, "www.example.org", dns.TypeHTTPS, c)
	if code != 0 || len(r.Answer) != 1 || !strings.Contains(out, "HTTPS     "+strings.Join(strings.Fields(r.Answer[0].String()), " ")+" (service)") ||
		!strings.Contains(out, "A decision, for the ipv4hint\nLadder\n") || !strings.Contains(out, "AAAA decision, for the ipv6hint\nLadder\n") {
		t.Errorf("Unexpected report for %s (CoreDNS %v):\n%s", c, r.Answer, out)
	}

	// A record without https: NODATA, as the server answers.
	for _, x := range explainAll(t, conf, "cdn.example.org", "HTTPS", clients[:10]) {
		if x.HTTPS != nil || len(x.Answer) != 0 || x.Rcode != "NOERROR" || x.Scope == nil || *x.Scope != 0 {
			t.Errorf("cdn.example.org HTTPS: %+v, want NODATA with scope 0", x)
		}
	}
	for _, c := range clients[:10] {
		if r := ask(t, s, "cdn.example.org", dns.TypeHTTPS, c); len(r.Answer) != 0 || replyECS(r).SourceScope != 0 {
			t.Errorf("CoreDNS's cdn.example.org HTTPS for %s: %s, want NODATA with scope 0", c, r)
		}
	}

	// A cname node's client: AliasMode, the same as the server's.
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", hybridNodes+"    https: {alpn: [h2]}\n")
	admin := testsupport.FreeAddr(t)
	htext := gslbCorefile(t, nodes, "admin "+admin)
	hconf := writeFile(t, dir, "Corefile", htext)
	hs := startServer(t, htext)
	hc := []string{"61.139.2.0/24", "202.101.172.0/24", "202.106.0.0/24"}
	modes := map[string]int{}
	for i, x := range explainAll(t, hconf, "www.example.org", "HTTPS", hc) {
		r := ask(t, hs, "www.example.org", dns.TypeHTTPS, hc[i])
		if len(r.Answer) != 1 || x.HTTPS == nil || x.HTTPS.Record != r.Answer[0].String() {
			t.Errorf("%s: explain %+v, CoreDNS %v", hc[i], x.HTTPS, r.Answer)
			continue
		}
		modes[x.HTTPS.Mode]++
		if x.HTTPS.Mode == "alias" && (len(x.Answer) != 1 || x.Answer[0].CNAME != "edge.vendor-cdn.example." || x.Answer[0].Node != "vendor-sc") {
			t.Errorf("%s: alias answer %+v, want vendor-sc's cname", hc[i], x.Answer)
		}
	}
	if modes["alias"] != 1 || modes["service"] != 2 {
		t.Errorf("Expected Sichuan alone in AliasMode, got %v", modes)
	}
	// The admin API's explain is the tool's.
	e := &adminEnv{addr: admin, s: hs}
	code, body := e.call(t, "GET", "/v1/explain?addr=61.139.2.0/24&name=www.example.org&type=HTTPS", "", "")
	var x explainedHTTPS
	if err := json.Unmarshal([]byte(body), &x); code != 200 || err != nil {
		t.Fatalf("GET /v1/explain: %d %v %s", code, err, body)
	}
	r = ask(t, hs, "www.example.org", dns.TypeHTTPS, "61.139.2.0/24")
	if x.Type != "HTTPS" || x.HTTPS == nil || len(r.Answer) != 1 || x.HTTPS.Record != r.Answer[0].String() || x.HTTPS.Mode != "alias" {
		t.Errorf("GET /v1/explain type=HTTPS: %s, want CoreDNS's %v", body, r.Answer)
	}
	if code, body := e.call(t, "GET", "/v1/explain?addr=61.139.2.0/24&type=MX", "", ""); code != 400 || !strings.Contains(body, "A, AAAA and HTTPS") {
		t.Errorf("GET /v1/explain type=MX: %d %s, want 400", code, body)
	}
}

func addresses(x *explained) string {
	var a []string
	for _, rr := range x.Answer {
		a = append(a, rr.Address)
	}
	return strings.Join(a, ",")
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestReplayHTTPS replays a CoreDNS log with A and HTTPS queries: an HTTPS
// query counts as its A decision, the node of the answer's first
// ipv4hint; HTTPS for a record without https is not a decision (the log
// says client=-).
func TestReplayHTTPS(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := toolFixture(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", httpsTable)
	text := readmeLogCorefile(t, city, asn, nodes)
	conf := writeFile(t, dir, "Corefile", text)
	s := startServer(t, text)
	v4, _ := toolV4Clients(120)
	wantNodes := map[string]int{}
	tiers := 0
	for i, c := range v4 {
		qtype := dns.TypeA
		if i%2 == 0 {
			qtype = dns.TypeHTTPS
		}
		r := ask(t, s, "www.example.org", qtype, c)
		if qtype == dns.TypeA {
			wantNodes[nodeProvince[inOrder(r)[0]][0]]++
		} else {
			wantNodes[nodeProvince[hints(r.Answer[0].(*dns.HTTPS))[0]][0]]++
		}
		tiers++
	}
	for _, c := range v4[:5] {
		ask(t, s, "cdn.example.org", dns.TypeHTTPS, c) // no https: NODATA, client=-
	}
	var lines []string
	waitFor(t, "every query logged", func() (bool, string) {
		lines = lines[:0]
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, " client=") {
				lines = append(lines, l)
			}
		}
		return len(lines) == len(v4)+5, fmt.Sprintf("%d lines", len(lines))
	})
	in := writeFile(t, dir, "coredns.log", strings.Join(lines, "\n")+"\n")
	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", "-strict", in)
	var got struct {
		replayJSON
		Ignored struct {
			OtherTypes int `json:"other_types"`
			OtherLines int `json:"other_lines"`
		}
		ResolverEntries float64 `json:"resolver_entries_per_subnet"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if got.Queries != len(v4) || fmt.Sprint(got.Nodes) != fmt.Sprint(wantNodes) {
		t.Errorf("Expected %d queries and %v (CoreDNS's answers), got %d and %v", len(v4), wantNodes, got.Queries, got.Nodes)
	}
	sum := 0
	for _, n := range got.Tiers {
		sum += n
	}
	if sum != tiers || got.Ignored.OtherTypes != 0 || got.Ignored.OtherLines != 5 {
		t.Errorf("Expected %d tiers, no other types and 5 undecided lines, got %v, %+v:\n%s", tiers, got.Tiers, got.Ignored, out)
	}
	if got.ResolverEntries <= 0 {
		t.Errorf("Expected resolver entries, got %v", got.ResolverEntries)
	}
}

// An HTTPS query for a record whose nodes have IPv6 addresses only counts
// as its AAAA decision, in the server's log and metrics and in explain
// and replay alike, not as an undecided query.
func TestHTTPSCountedAAAA(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz6, ipv6: ["2001:db8::10"], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
records:
  - name: v6.example.org
    https: {alpn: [h3]}
`)
	text := gslbCorefile(t, nodes, "")
	conf := writeFile(t, dir, "Corefile", text)
	s := startServer(t, text)
	before := counterValue(t, "coredns_gslb_node_answers_total", "node", "hz6")
	r, l := queryLabels(t, s, logs, newQuery(t, "v6.example.org", dns.TypeHTTPS, "202.101.172.0/24"))
	if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), `ipv6hint="2001:db8::10"`) {
		t.Fatalf("HTTPS: %s, want hz6's ipv6hint", r)
	}
	if l["gslb/node"] != "hz6" || l["gslb/tier"] != "province_isp" {
		t.Errorf("Labels gslb/node=%s gslb/tier=%s, want hz6 on province_isp", l["gslb/node"], l["gslb/tier"])
	}
	if n := counterValue(t, "coredns_gslb_node_answers_total", "node", "hz6") - before; n != 1 {
		t.Errorf("node_answers_total{node=hz6} grew by %v, want 1", n)
	}
	x := explainAll(t, conf, "v6.example.org", "HTTPS", []string{"202.101.172.0/24"})[0]
	if x.Node != "hz6" || x.Tier != "province_isp" || x.HTTPS == nil || x.HTTPS.Record != r.Answer[0].String() {
		t.Errorf("explain: node %s tier %s %+v, want hz6 and CoreDNS's %s", x.Node, x.Tier, x.HTTPS, r.Answer[0])
	}
	// The replay reads a log in the README's format, from a server that
	// writes it.
	lt := fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    metadata
    log . %s
    gslb {
        geoip %s
        nodes %s
    }
}`, readmeLogFormat(t), repoFile(t, "demo/gslb-demo-City.mmdb"), nodes)
	ask(t, startServer(t, lt), "v6.example.org", dns.TypeHTTPS, "202.101.172.0/24")
	in := writeFile(t, dir, "clients.log", logs.line(t, "HTTPS v6.example.org. ")+"\n")
	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", "-strict", in)
	var got replayJSON
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Queries != 1 || got.Nodes["hz6"] != 1 || got.Tiers["province_isp"] != 1 {
		t.Errorf("replay: exit %d %v %s: %s, want hz6 on province_isp once", code, err, stderr, out)
	}
}
