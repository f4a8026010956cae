package gslb

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// The rate limit applies to each kind of reply gslb writes or returns:
// past an account's burst, a reply is dropped (nothing written, the server
// told not to write) or slipped (an empty reply with TC), and log_only
// sends it; TCP is never limited.
func TestServeDNSRateLimit(t *testing.T) {
	formerr := query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))
	formerr.IsEdns0().Option[0].(*dns.EDNS0_SUBNET).SourceNetmask = 40 // too long for IPv4
	for _, tc := range []struct {
		name, rrl string
		m         *dns.Msg
		tcp       bool
		// what the 3rd to 6th replies are: written whole, slipped, dropped
		whole, slipped, dropped int
	}{
		{"answer", "answers 1", query("www.example.org", dns.TypeA, nil), false, 0, 2, 2},
		{"denial", "denials 1", query("nothere.example.org", dns.TypeA, nil), false, 0, 2, 2},
		{"error", "errors 1", formerr, false, 0, 2, 2},
		{"no slip", "answers 1\nslip 0", query("www.example.org", dns.TypeA, nil), false, 0, 0, 4},
		{"log_only", "answers 1\nlog_only", query("www.example.org", dns.TypeA, nil), false, 4, 0, 0},
		{"tcp", "answers 1", query("www.example.org", dns.TypeA, nil), true, 4, 0, 0},
		{"exempt", "answers 1\nexempt 10.240.0.0/16", query("www.example.org", dns.TypeA, nil), false, 4, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFixtureGSLB(t, fixtureNodes, "rrl {\n"+tc.rrl+"\nexempt none\n}\n")
			if tc.name == "exempt" {
				g = newFixtureGSLB(t, fixtureNodes, "rrl {\n"+tc.rrl+"\n}\n")
			}
			whole, slipped, dropped := 0, 0, 0
			for i := range 6 {
				w := &test.ResponseWriter{TCP: tc.tcp}
				rec := dnstest.NewRecorder(w)
				rc, _ := g.ServeDNS(context.Background(), rec, tc.m)
				written := rec.Msg != nil || rc != dns.RcodeSuccess && rc != dns.RcodeNameError
				if i < 2 { // a second's worth: 1, and one more at the edge
					if !written || rec.Msg != nil && rec.Msg.Truncated {
						t.Fatalf("Reply %d within the burst: rc %d, %v", i, rc, rec.Msg)
					}
					continue
				}
				switch {
				case rec.Msg != nil && rec.Msg.Truncated:
					slipped++
					if len(rec.Msg.Answer)+len(rec.Msg.Ns) != 0 || len(rec.Msg.Question) != 1 {
						t.Errorf("Slipped reply: want the question alone:\n%s", rec.Msg)
					}
				case written:
					whole++
				default:
					dropped++
				}
			}
			if whole != tc.whole || slipped != tc.slipped || dropped != tc.dropped {
				t.Errorf("Replies 3 to 6: %d whole, %d slipped, %d dropped; want %d, %d, %d", whole, slipped, dropped, tc.whole, tc.slipped, tc.dropped)
			}
		})
	}
}
