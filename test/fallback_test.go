package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestFallback: with one node usable the record answers its address; with
// every node down it answers its fallback CNAME (even under all_down
// servfail), counted and labelled tier fallback, and explain says so.
func TestFallback(t *testing.T) {
	const zj = "202.101.172.0/24"
	logs := captureLog(t)
	hz, sh := newProbeTarget(t), newProbeTarget(t)
	table := probedNodes(hz.url(), sh.url()) + "    fallback: Backup.Vendor-CDN.example\n"
	nodes := writeFile(t, t.TempDir(), "nodes.yaml", table)
	admin := testsupport.FreeAddr(t)
	s := startServer(t, gslbCorefile(t, nodes, "all_down servfail\ncooldown 0s\nadmin "+admin))

	hz.mode.Store(target503)
	waitState(t, s, logs, zj, "192.0.2.20", "up") // one usable: not the fallback

	sh.mode.Store(target503)
	var r *dns.Msg
	waitFor(t, "the fallback", func() (bool, string) {
		r = ask(t, s, "www.example.org", dns.TypeA, zj)
		return r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 && r.Answer[0].Header().Rrtype == dns.TypeCNAME, r.String()
	})
	if c := r.Answer[0].(*dns.CNAME); c.Target != "backup.vendor-cdn.example." {
		t.Errorf("Fallback %s, want backup.vendor-cdn.example.", c)
	}
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, zj))
	if l["gslb/tier"] != "fallback" || l["gslb/node"] != "-" {
		t.Errorf("Labels gslb/tier=%s gslb/node=%s, want fallback and none", l["gslb/tier"], l["gslb/node"])
	}
	if n := counterValue(t, "coredns_gslb_decisions_total", "tier", "fallback"); n < 1 {
		t.Errorf("decisions_total{tier=fallback} = %v, want > 0", n)
	}

	e := &adminEnv{addr: admin, s: s}
	code, body := e.call(t, "GET", "/v1/explain?addr="+zj+"&name=www.example.org&type=A", "", "")
	var x struct {
		Tier   string `json:"tier"`
		Answer []struct {
			Node, CNAME string
		} `json:"answer"`
	}
	if err := json.Unmarshal([]byte(body), &x); code != 200 || err != nil {
		t.Fatalf("GET /v1/explain: %d %v %s", code, err, body)
	}
	if x.Tier != "fallback" || len(x.Answer) != 1 || x.Answer[0].CNAME != "backup.vendor-cdn.example." || x.Answer[0].Node != "" {
		t.Errorf("explain: %s, want tier fallback answering the CNAME", body)
	}

	hz.mode.Store(targetOK)
	waitState(t, s, logs, zj, "192.0.2.10", "up")
	if strings.Contains(answerOf(ask(t, s, "www.example.org", dns.TypeA, zj)), "backup") {
		t.Errorf("Fallback after a node came back")
	}
}
