package test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// scrape is the series of name whose labels hold every one of labels
// (`k="v"`, as Prometheus prints them), from addr's /metrics.
func scrape(t *testing.T, addr, name string, labels ...string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("Scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("Scrape %s: %v", addr, err)
	}
	var sum float64
	found := false
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		ok := true
		for _, lb := range labels {
			ok = ok && strings.Contains(l, lb)
		}
		if ok {
			var v float64
			fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestDemoMetrics: the demo (no probe, no canary) scraped through the
// prometheus plugin: every node reads node_up 1 and its table load, as
// the README says, the stable policy counts every decision (the
// dashboard's canary panel shows the traffic, not 0/s), and the node
// table's file_ok is 1.
func TestDemoMetrics(t *testing.T) {
	prom := testsupport.FreeAddr(t)
	nodes := repoFile(t, "nodes.example.yaml")
	s := startServer(t, fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    prometheus %s
    gslb {
        geoip %s
        asn %s
        nodes %s
    }
}`, prom, repoFile(t, "demo/gslb-demo-City.mmdb"), repoFile(t, "demo/gslb-demo-ASN.mmdb"), nodes))
	before, _ := scrape(t, prom, "coredns_gslb_policy_decisions_total", `policy="stable"`)
	const n = 5
	for range n {
		if r := ask(t, s, "www.example.org", dns.TypeA, "202.101.172.0/24"); answerOf(r) == "" {
			t.Fatalf("No answer: %v", r)
		}
	}
	for node, load := range map[string]float64{"hz-telecom": 0.1, "sh-telecom": 0.2, "bj-unicom": 0.3} {
		if v, ok := scrape(t, prom, "coredns_gslb_node_up", `node="`+node+`"`); !ok || v != 1 {
			t.Errorf("node_up{node=%q} = %v (exported %v), want 1: the node has no probe", node, v, ok)
		}
		if v, ok := scrape(t, prom, "coredns_gslb_node_load", `node="`+node+`"`); !ok || v != load {
			t.Errorf("node_load{node=%q} = %v (exported %v), want its table load %v", node, v, ok, load)
		}
	}
	if v, _ := scrape(t, prom, "coredns_gslb_policy_decisions_total", `policy="stable"`); v-before < n {
		t.Errorf("policy_decisions_total{policy=\"stable\"} grew by %v over %d decisions without a canary, want %d", v-before, n, n)
	}
	if v, _ := scrape(t, prom, "coredns_gslb_policy_province_match_total", `policy="stable"`); v == 0 {
		t.Errorf("policy_province_match_total{policy=\"stable\"} is 0 after located decisions: the canary panel's ratio would be NaN")
	}
	if v, ok := scrape(t, prom, "coredns_gslb_file_ok", `file="`+nodes+`"`); !ok || v != 1 {
		t.Errorf("file_ok{file=%q} = %v (exported %v), want 1", nodes, v, ok)
	}
}
