package test

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

// TestAnswers queries the demo setup over UDP and TCP, with and without ECS.
func TestAnswers(t *testing.T) {
	s := startServer(t, demoCorefile(t, "ttl 45"))
	// Without a usable ECS the client is the resolver, 127.0.0.1: no
	// location, so the location-free choice answers.
	resolverAnswer := answerOf(ask(t, s, "www.example.org", dns.TypeA, ""))
	if resolverAnswer == "" {
		t.Fatalf("No answer for a query without ECS")
	}

	tests := []struct {
		name     string
		qtype    uint16
		ecs      string
		want     string // "" = the resolver's answer
		ttl      uint32
		minScope uint8 // the reply's scope is in minScope..source
	}{
		{"www.example.org", dns.TypeA, "202.101.172.0/24", "192.0.2.10", 45, 24},
		{"www.example.org", dns.TypeA, "202.106.0.0/24", "198.51.100.10", 45, 24},
		{"www.example.org", dns.TypeA, "8.8.8.0/24", "203.0.113.50", 45, 24},
		{"www.example.org", dns.TypeA, "61.139.2.0/24", "203.0.113.10", 45, 24},
		{"api.example.org", dns.TypeA, "202.101.172.0/24", "192.0.2.10", 30, 24},
		{"api.example.org", dns.TypeA, "8.8.8.0/24", "203.0.113.50", 30, 24},
		{"www.example.org", dns.TypeAAAA, "202.101.172.0/24", "2001:db8::10", 45, 24},
		{"www.example.org", dns.TypeAAAA, "2001:da8:0:100::/56", "2001:db8::30", 45, 32},
		// A /48, the unit of the cache, is trusted by default (ecs_min_prefix 24 48).
		{"www.example.org", dns.TypeAAAA, "2001:da8::/48", "2001:db8::30", 45, 32},
		// Coarser than ecs_min_prefix (24 48): the resolver's address decides, scope 0.
		{"www.example.org", dns.TypeA, "202.101.0.0/16", "", 45, 0},
		{"www.example.org", dns.TypeA, "", "", 45, 0},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name+"/"+dns.TypeToString[tc.qtype]+"/"+tc.ecs, func(t *testing.T) {
				q := newQuery(t, tc.name, tc.qtype, tc.ecs)
				r := exchange(t, network, s.addr(network), q)
				if r.Rcode != dns.RcodeSuccess {
					t.Fatalf("Rcode %s, want NOERROR", dns.RcodeToString[r.Rcode])
				}
				if !r.Authoritative {
					t.Errorf("AA bit not set")
				}
				want := tc.want
				if want == "" {
					want = resolverAnswer
				}
				if got := answerOf(r); got != want {
					t.Errorf("Answer %q, want %q", got, want)
				}
				for _, rr := range r.Answer {
					if rr.Header().Ttl != tc.ttl {
						t.Errorf("TTL %d, want %d: %s", rr.Header().Ttl, tc.ttl, rr)
					}
				}
				checkReplyECS(t, q, r, tc.minScope)
			})
		}
	}
}

// checkReplyECS checks that the reply's ECS echoes the query's family,
// source prefix and address, with a scope in minScope..source (0 when the
// ECS was not used).
func checkReplyECS(t *testing.T, q, r *dns.Msg, minScope uint8) {
	t.Helper()
	qe := replyECS(q)
	re := replyECS(r)
	if qe == nil {
		if re != nil {
			t.Errorf("Reply carries ECS %s to a query without ECS", re)
		}
		return
	}
	if re == nil {
		t.Fatalf("Reply has no ECS option")
	}
	if re.Family != qe.Family || re.SourceNetmask != qe.SourceNetmask || !net.IP.Equal(re.Address, qe.Address) {
		t.Errorf("Reply ECS %s (family %d), want the query's %s (family %d)", re, re.Family, qe, qe.Family)
	}
	if re.SourceScope < minScope || re.SourceScope > qe.SourceNetmask {
		t.Errorf("Reply ECS scope %d, want %d..%d", re.SourceScope, minScope, qe.SourceNetmask)
	}
	if minScope == 0 && re.SourceScope != 0 {
		t.Errorf("Reply ECS scope %d for an unused ECS, want 0", re.SourceScope)
	}
}
