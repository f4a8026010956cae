package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Probe target behaviours.
const (
	targetOK int32 = iota
	target503
	targetClose // accept, then close the connection without a response
	targetHang  // accept, and never answer
)

// probeTarget is an HTTP health endpoint on 127.0.0.1 whose answer the test switches.
type probeTarget struct {
	srv  *httptest.Server
	mode atomic.Int32
}

func newProbeTarget(t *testing.T) *probeTarget {
	p := &probeTarget{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p.mode.Load() {
		case target503:
			http.Error(w, "down", http.StatusServiceUnavailable)
		case targetClose:
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
		case targetHang:
			<-r.Context().Done()
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *probeTarget) url() string { return p.srv.URL + "/health" }

// probedNodes is a table with two Zhejiang-friendly nodes, both probed
// every second with rise 1 and fall 1 (a timeout no live loopback
// endpoint reaches on a loaded machine): hz-telecom (same province) first,
// sh-telecom (a neighbour) next.
func probedNodes(hz, sh string) string {
	probe := `{type: http, url: "%s", expect_body: ok, interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}`
	return fmt.Sprintf(`nodes:
  - id: hz-telecom
    ipv4: [192.0.2.10]
    country: CN
    province: ZJ
    isp: telecom
    lat: 30.27
    lon: 120.16
    load: 0.1
    probe: `+probe+`
  - id: sh-telecom
    ipv4: [192.0.2.20]
    country: CN
    province: SH
    isp: telecom
    lat: 31.23
    lon: 121.47
    load: 0.2
    probe: `+probe+`
records:
  - name: www.example.org
`, hz, sh)
}

// TestProbeFailover: a node whose probe fails leaves the answers for the
// next node on the ladder; with every node down, all_down decides.
func TestProbeFailover(t *testing.T) {
	const zj = "202.101.172.0/24" // Zhejiang, telecom
	tests := []struct {
		allDown   string
		failHZ    int32
		failSH    int32
		wantRcode int    // with both nodes down
		wantAll   string // answer with both nodes down
	}{
		{"open", target503, targetClose, dns.RcodeSuccess, "192.0.2.10"}, // least loaded
		{"servfail", targetClose, target503, dns.RcodeServerFailure, ""},
	}
	for _, tc := range tests {
		t.Run(tc.allDown, func(t *testing.T) {
			logs := captureLog(t)
			hz, sh := newProbeTarget(t), newProbeTarget(t)
			nodes := writeFile(t, t.TempDir(), "nodes.yaml", probedNodes(hz.url(), sh.url()))
			s := startServer(t, gslbCorefile(t, nodes, "all_down "+tc.allDown+"\ncooldown 0s"))

			// Both up: the same province wins.
			waitState(t, s, logs, zj, "192.0.2.10", "up")

			hz.mode.Store(tc.failHZ)
			waitState(t, s, logs, zj, "192.0.2.20", "up")

			sh.mode.Store(tc.failSH)
			waitFor(t, "every node down", func() (bool, string) {
				r := ask(t, s, "www.example.org", dns.TypeA, zj)
				return r.Rcode == tc.wantRcode && answerOf(r) == tc.wantAll,
					dns.RcodeToString[r.Rcode] + " " + answerOf(r)
			})
			if tc.wantRcode == dns.RcodeSuccess {
				_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, zj))
				if l["gslb/tier"] != "fail_open" || l["gslb/node_state"] != "down" {
					t.Errorf("Labels tier=%s node_state=%s, want fail_open and down", l["gslb/tier"], l["gslb/node_state"])
				}
			}

			// hold_down is 0s and rise 1: one good probe brings it back.
			hz.mode.Store(targetOK)
			waitState(t, s, logs, zj, "192.0.2.10", "up")
		})
	}
}

// waitState polls until the ECS client gets answer want from a node in the
// given node_state.
func waitState(t *testing.T, s *server, logs *logBuffer, ecs, want, state string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("answer %s from a node %s", want, state), func() (bool, string) {
		r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, ecs))
		got := answerOf(r)
		return r.Rcode == dns.RcodeSuccess && got == want && l["gslb/node_state"] == state,
			fmt.Sprintf("%s %q node=%s state=%s tier=%s", dns.RcodeToString[r.Rcode], got, l["gslb/node"], l["gslb/node_state"], l["gslb/tier"])
	})
}
