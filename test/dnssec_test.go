package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testunbound"

	"github.com/miekg/dns"
)

// writeZoneKey writes a new ECDSA P-256 key pair for zone in BIND format
// and returns its base name and the DNSKEY.
func writeZoneKey(t *testing.T, dir, zone string, flags uint16) (string, *dns.DNSKEY) {
	t.Helper()
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: flags, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	priv, err := k.Generate(256)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", zone, k.Algorithm, k.KeyTag()))
	if err := os.WriteFile(base+".key", []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".private", []byte(k.PrivateKeyString(priv)), 0o600); err != nil {
		t.Fatal(err)
	}
	return base, k
}

// verifyRRSIGs checks every RRSIG of section against key and says how many
// RRsets of the section (other than RRSIG) have one.
func verifyRRSIGs(t *testing.T, key *dns.DNSKEY, section []dns.RR) {
	t.Helper()
	sets := map[uint16][]dns.RR{}
	var sigs []*dns.RRSIG
	for _, rr := range section {
		if s, ok := rr.(*dns.RRSIG); ok {
			sigs = append(sigs, s)
			continue
		}
		sets[rr.Header().Rrtype] = append(sets[rr.Header().Rrtype], rr)
	}
	for typ, set := range sets {
		ok := false
		for _, s := range sigs {
			if s.TypeCovered != typ {
				continue
			}
			if err := s.Verify(key, set); err != nil {
				t.Errorf("RRSIG over %s does not verify: %v", dns.TypeToString[typ], err)
			}
			if !s.ValidityPeriod(time.Now()) {
				t.Errorf("RRSIG over %s is not valid now", dns.TypeToString[typ])
			}
			ok = true
		}
		if !ok {
			t.Errorf("%s RRset has no RRSIG", dns.TypeToString[typ])
		}
	}
}

// With `dnssec KEYFILE { denial black_lies }`, gslb signs its answers: a validating unbound with
// the zone's trust anchor in front returns them with the AD bit, positive
// and negative, and each RRSIG verifies against the zone's key.
func TestDNSSECThroughUnbound(t *testing.T) {
	dir := t.TempDir()
	base, key := writeZoneKey(t, dir, "example.org.", 257)
	srv := startServer(t, demoCorefile(t, "dnssec "+base+" {\n            denial black_lies\n        }"))

	t.Run("direct", func(t *testing.T) {
		do := func(name string, qtype uint16, ecs string) *dns.Msg {
			m := newQuery(t, name, qtype, ecs)
			if ecs == "" {
				m.SetEdns0(1232, true)
			} else {
				m.IsEdns0().SetDo()
			}
			return exchange(t, "tcp", srv.tcp, m)
		}
		r := do("www.example.org", dns.TypeA, "202.101.172.0/24")
		if r.Rcode != dns.RcodeSuccess || len(answers(r)) == 0 || replyECS(r) == nil {
			t.Fatalf("Signed A: want addresses and the ECS option:\n%s", r)
		}
		verifyRRSIGs(t, key, r.Answer)
		r = do("nothere.example.org", dns.TypeA, "")
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
			t.Fatalf("Signed NXDOMAIN: want a NODATA black lie:\n%s", r)
		}
		verifyRRSIGs(t, key, r.Ns)
		r = do("example.org", dns.TypeDNSKEY, "")
		verifyRRSIGs(t, key, r.Answer)
		// Without DO: the DNSKEY RRset, unsigned; other answers unsigned.
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"example.org", dns.TypeDNSKEY}, {"www.example.org", dns.TypeA}} {
			r := exchange(t, "udp", srv.udp, newQuery(t, q.name, q.qtype, "202.101.172.0/24"))
			if len(r.Answer) == 0 {
				t.Fatalf("%s %s without DO: no answer:\n%s", q.name, dns.TypeToString[q.qtype], r)
			}
			for _, rr := range r.Answer {
				if rr.Header().Rrtype == dns.TypeRRSIG {
					t.Errorf("%s %s without DO is signed:\n%s", q.name, dns.TypeToString[q.qtype], r)
				}
			}
		}
		if r := ask(t, srv, "nothere.example.org", dns.TypeA, ""); r.Rcode != dns.RcodeNameError {
			t.Errorf("NXDOMAIN without DO is %s", dns.RcodeToString[r.Rcode])
		}
	})

	addr := testunbound.Start(t, "example.org.", []*dns.DS{key.ToDS(dns.SHA256)}, srv.udp)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		answers int // at least, RRSIGs not counted
	}{
		{"A", "www.example.org.", dns.TypeA, 1},
		{"AAAA", "www.example.org.", dns.TypeAAAA, 1},
		{"NODATA", "www.example.org.", dns.TypeTXT, 0},
		{"NXDOMAIN as black lie", "nothere.example.org.", dns.TypeA, 0},
		{"DNSKEY", "example.org.", dns.TypeDNSKEY, 1},
		{"SOA", "example.org.", dns.TypeSOA, 1},
	}
	for _, tc := range tests {
		t.Run("unbound/"+tc.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, tc.qtype)
			m.SetEdns0(1232, true)
			m.AuthenticatedData = true
			r := exchange(t, "tcp", addr, m)
			n := 0
			for _, a := range r.Answer {
				if a.Header().Rrtype != dns.TypeRRSIG {
					n++
				}
			}
			if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData || n < tc.answers || tc.answers == 0 && n != 0 {
				t.Errorf("rcode %s AD %v %d answers, want NOERROR AD with %d:\n%s",
					dns.RcodeToString[r.Rcode], r.AuthenticatedData, n, tc.answers, r)
			}
		})
	}
}

// dnssec with fallthrough is warned about: the names passed on are not
// gslb's to sign.
func TestDNSSECFallthroughWarns(t *testing.T) {
	logs := captureLog(t)
	base, _ := writeZoneKey(t, t.TempDir(), "example.org.", 257)
	startServer(t, demoCorefile(t, "dnssec "+base+"\n        fallthrough"))
	logs.line(t, "dnssec with fallthrough")
}

// A record's ttl above an hour reaches a validating resolver intact: the
// RRSIG's original TTL is the RRset's, not a fixed 3600 that unbound
// would cap the TTL at. The same RRset with the adaptive ttl's MIN (here
// for a client whose pin expires soon) validates too, signed apart.
func TestDNSSECTTL(t *testing.T) {
	dir := t.TempDir()
	base, key := writeZoneKey(t, dir, "example.org.", 257)
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
records:
  - name: www.example.org
    ttl: [7200, 600]
`)
	// 127.0.0.2's pin ends in 5 minutes: its answers get MIN.
	overrides := writeFile(t, dir, "overrides.yaml", fmt.Sprintf("overrides:\n  - cidr: 127.0.0.2/32\n    nodes: [hz-telecom]\n    expires: %s\n",
		time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339)))
	srv := startServer(t, gslbCorefile(t, nodes, "dnssec "+base+"\n        overrides "+overrides))

	for _, tc := range []struct {
		from string
		ttl  uint32
	}{{"127.0.0.1", 7200}, {"127.0.0.2", 600}} {
		t.Run("direct/"+tc.from, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("www.example.org.", dns.TypeA)
			m.SetEdns0(1232, true)
			c := &dns.Client{Net: "tcp", Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}}
			r, _, err := c.Exchange(m, srv.tcp)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Answer) != 2 || r.Answer[0].Header().Ttl != tc.ttl {
				t.Fatalf("Want the A record with TTL %d and its RRSIG:\n%s", tc.ttl, r)
			}
			verifyRRSIGs(t, key, r.Answer)
			if sig := r.Answer[1].(*dns.RRSIG); sig.OrigTtl != tc.ttl || sig.Hdr.Ttl != tc.ttl {
				t.Errorf("RRSIG original TTL %d, TTL %d, want %d", sig.OrigTtl, sig.Hdr.Ttl, tc.ttl)
			}
		})
		t.Run("unbound/"+tc.from, func(t *testing.T) {
			addr := testunbound.StartFrom(t, "example.org.", []*dns.DS{key.ToDS(dns.SHA256)}, srv.udp, tc.from)
			// The second answer comes from unbound's cache.
			for i := range 2 {
				m := new(dns.Msg)
				m.SetQuestion("www.example.org.", dns.TypeA)
				m.SetEdns0(1232, true)
				r := exchange(t, "tcp", addr, m)
				if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData || len(answers(r)) != 1 {
					t.Fatalf("Query %d: want one validated A record:\n%s", i, r)
				}
				low := uint32(0)
				if tc.ttl > 3600 {
					low = 3600
				}
				if ttl := r.Answer[0].Header().Ttl; ttl > tc.ttl || ttl <= low || ttl < tc.ttl-60 {
					t.Errorf("Query %d: unbound's TTL %d, want about %d", i, ttl, tc.ttl)
				}
			}
		})
	}
}
