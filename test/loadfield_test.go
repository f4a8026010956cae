package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLoadFieldMissingThroughCoreDNS: a probe body without the load_field
// fails the probe with reason body, as README "Health probes" says, and
// the node leaves rotation; the field's return brings it back.
func TestLoadFieldMissingThroughCoreDNS(t *testing.T) {
	dir := t.TempDir()
	city, asn := steeringDBs(t, dir)
	var body atomic.Value
	body.Store(`{"load": 0.10}`)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body.Load())
	}))
	t.Cleanup(target.Close)
	nodes := writeFile(t, dir, "nodes.yaml", "nodes:\n"+zjNode("lf-hz", "192.0.2.1", target.URL)+
		`  - {id: lf-sh, ipv4: [192.0.2.9], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
records:
  - name: www.example.org
`)
	s := startServer(t, corefile(city, asn, nodes, "spread 0\ncooldown 0s"))
	answer := func() string { return answerOf(ask(t, s, "www.example.org", dns.TypeA, "58.0.1.0/24")) }
	waitFor(t, "lf-hz serving Zhejiang", func() (bool, string) { got := answer(); return got == "192.0.2.1", got })

	before := probeFailures(t, "lf-hz", "body")
	body.Store(`{"cpu": 0.10}`)
	waitFor(t, "lf-hz down", func() (bool, string) {
		v := counterValue(t, "coredns_gslb_node_up", "node", "lf-hz")
		return v == 0, fmt.Sprint(v)
	})
	if got := answer(); got != "192.0.2.9" {
		t.Errorf("Answer %s with lf-hz down, want lf-sh", got)
	}
	if after := probeFailures(t, "lf-hz", "body"); after <= before {
		t.Errorf("probe_failures_total{node=lf-hz,reason=body} stayed at %v", after)
	}

	body.Store(`{"load": 0.20}`)
	waitFor(t, "lf-hz back", func() (bool, string) { got := answer(); return got == "192.0.2.1", got })
}

// probeFailures is coredns_gslb_probe_failures_total{node, reason}.
func probeFailures(t *testing.T, node, reason string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "coredns_gslb_probe_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["node"] == node && l["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
