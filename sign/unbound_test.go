package sign

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/testunbound"

	"github.com/miekg/dns"
)

// authority is a tiny authoritative server for zone answering the way
// gslb does, with TTL ttl, signed by the current Signer when the query has
// the DO bit. bogus.example.test has its A record changed after signing.
func authority(t *testing.T, cur *atomic.Pointer[Signer], ttl uint32) string {
	t.Helper()
	soa := rr(t, "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30")
	soa.Header().Ttl = ttl
	names := map[string]map[uint16][]string{
		"example.test.":       {dns.TypeNS: {"example.test. 30 IN NS ns1.example.test."}, dns.TypeSOA: {soa.String()}},
		"ns1.example.test.":   {dns.TypeA: {"ns1.example.test. 30 IN A 127.0.0.1"}},
		"www.example.test.":   {dns.TypeA: {"www.example.test. 30 IN A 192.0.2.1", "www.example.test. 30 IN A 192.0.2.2"}, dns.TypeHTTPS: {`www.example.test. 30 IN HTTPS 1 . alpn="h2,h3" ipv4hint=192.0.2.1`}},
		"alias.example.test.": {dns.TypeCNAME: {"alias.example.test. 30 IN CNAME www.example.test."}},
		"bogus.example.test.": {dns.TypeA: {"bogus.example.test. 30 IN A 192.0.2.66"}},
	}
	for _, types := range names {
		for _, rrs := range types {
			for i := range rrs {
				rrs[i] = strings.Replace(rrs[i], " 30 IN ", fmt.Sprintf(" %d IN ", ttl), 1)
			}
		}
	}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		s := cur.Load()
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		name := strings.ToLower(q.Name)
		do := r.IsEdns0() != nil && r.IsEdns0().Do()
		switch rrs, ok := names[name]; {
		case name == zone && q.Qtype == dns.TypeDNSKEY:
			s.DNSKEY(m, do, "")
			do = false
		case !ok:
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{dns.Copy(soa)}
		case rrs[dns.TypeCNAME] != nil && q.Qtype != dns.TypeCNAME:
			m.Answer = []dns.RR{rr(t, rrs[dns.TypeCNAME][0])}
		case rrs[q.Qtype] == nil:
			m.Ns = []dns.RR{dns.Copy(soa)}
		default:
			for _, a := range rrs[q.Qtype] {
				m.Answer = append(m.Answer, rr(t, a))
			}
		}
		if r.IsEdns0() != nil {
			m.SetEdns0(1232, r.IsEdns0().Do())
		}
		if do {
			s.Sign(m, "")
		}
		if name == "bogus.example.test." && len(m.Answer) > 0 {
			m.Answer[0].(*dns.A).A = net.IPv4(192, 0, 2, 99)
		}
		w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: h}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	if l, err := net.Listen("tcp", pc.LocalAddr().String()); err == nil {
		tsrv := &dns.Server{Listener: l, Handler: h}
		go tsrv.ActivateAndServe()
		t.Cleanup(func() { tsrv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// unbound starts a validating unbound on loopback with the zone's DS as
// its trust anchor and the authority as the zone's stub.
func unbound(t *testing.T, s *Signer, auth string) string {
	t.Helper()
	return testunbound.Start(t, zone, s.DS(), auth)
}

// A validating resolver with the zone's trust anchor accepts the signed
// answers, positive and negative, as secure.
func TestUnboundValidates(t *testing.T) {
	configs := []struct {
		name          string
		keys, publish []uint16
	}{
		{"CSK", []uint16{257}, nil},
		{"KSK and ZSK", []uint16{257, 256}, nil},
		// The two states of a ZSK pre-publish rollover: a published key
		// that signs nothing, before and after it takes over.
		{"ZSK pre-published", []uint16{257, 256}, []uint16{256}},
		{"two CSKs", []uint16{257, 257}, nil},
	}
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			dir := t.TempDir()
			var c Config
			for _, f := range cf.keys {
				c.Keys = append(c.Keys, writeKey(t, dir, zone, f))
			}
			for _, f := range cf.publish {
				c.Publish = append(c.Publish, writeKey(t, dir, zone, f))
			}
			ss, err := Load([]string{zone}, c)
			if err != nil {
				t.Fatal(err)
			}
			s := ss[zone]
			flags := append(cf.keys, cf.publish...)
			var cur atomic.Pointer[Signer]
			cur.Store(s)
			addr := unbound(t, s, authority(t, &cur, 30))
			tests := []struct {
				name    string
				qname   string
				qtype   uint16
				rcode   int
				answers int
				ad      bool
			}{
				// A DS denial first: www is no delegation, and stays secure.
				{"DS", "www.example.test.", dns.TypeDS, dns.RcodeSuccess, 0, true},
				{"A", "www.example.test.", dns.TypeA, dns.RcodeSuccess, 2, true},
				{"NODATA", "www.example.test.", dns.TypeAAAA, dns.RcodeSuccess, 0, true},
				{"NXDOMAIN as black lie", "nope.example.test.", dns.TypeA, dns.RcodeSuccess, 0, true},
				{"CNAME", "alias.example.test.", dns.TypeA, dns.RcodeSuccess, 3, true},
				// After the AAAA denial: its NSEC must not deny HTTPS.
				{"HTTPS", "www.example.test.", dns.TypeHTTPS, dns.RcodeSuccess, 1, true},
				{"NXDOMAIN apex type", "example.test.", dns.TypeMX, dns.RcodeSuccess, 0, true},
				{"apex NS", "example.test.", dns.TypeNS, dns.RcodeSuccess, 1, true},
				{"apex SOA", "example.test.", dns.TypeSOA, dns.RcodeSuccess, 1, true},
				{"DNSKEY", "example.test.", dns.TypeDNSKEY, dns.RcodeSuccess, len(flags), true},
				{"tampered", "bogus.example.test.", dns.TypeA, dns.RcodeServerFailure, 0, false},
			}
			for _, tc := range tests {
				m := new(dns.Msg)
				m.SetQuestion(tc.qname, tc.qtype)
				m.SetEdns0(1232, true)
				m.AuthenticatedData = true
				r, _, err := (&dns.Client{Net: "tcp"}).Exchange(m, addr)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				answers := 0
				for _, a := range r.Answer {
					if a.Header().Rrtype != dns.TypeRRSIG {
						answers++
					}
				}
				if r.Rcode != tc.rcode || r.AuthenticatedData != tc.ad || answers != tc.answers {
					t.Errorf("%s: rcode %s AD %v %d answers, want %s AD %v %d answers:\n%s", tc.name,
						dns.RcodeToString[r.Rcode], r.AuthenticatedData, answers, dns.RcodeToString[tc.rcode], tc.ad, tc.answers, r)
				}
			}
		})
	}
}

// A ZSK rollover by pre-publication, step by step as the package says,
// keeps every answer of a validating resolver secure.
func TestUnboundZSKRollover(t *testing.T) {
	dir := t.TempDir()
	ksk, old, next := writeKey(t, dir, zone, 257), writeKey(t, dir, zone, 256), writeKey(t, dir, zone, 256)
	load := func(keys, publish []string) *Signer {
		ss, err := Load([]string{zone}, Config{Keys: keys, Publish: publish, DNSKEYTTL: 1})
		if err != nil {
			t.Fatal(err)
		}
		return ss[zone]
	}
	tag := func(base string) uint16 {
		s := load([]string{base}, nil)
		return s.dnskey[0].KeyTag()
	}
	var cur atomic.Pointer[Signer]
	cur.Store(load([]string{ksk, old}, nil))
	addr := unbound(t, cur.Load(), authority(t, &cur, 1))
	ask := func(qtype uint16) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", qtype)
		if qtype == dns.TypeDNSKEY {
			m.SetQuestion(zone, qtype)
		}
		m.SetEdns0(1232, true)
		r, _, err := (&dns.Client{Net: "tcp"}).Exchange(m, addr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData {
			t.Fatalf("%s: rcode %s AD %v, want a secure answer throughout:\n%s", dns.TypeToString[qtype], dns.RcodeToString[r.Rcode], r.AuthenticatedData, r)
		}
		return r
	}
	phases := []struct {
		name          string
		keys, publish []string
		dnskeys       int
		signer        uint16
	}{
		{"start", []string{ksk, old}, nil, 2, tag(old)},
		{"new ZSK published", []string{ksk, old}, []string{next}, 3, tag(old)},
		{"new ZSK signs, old one published", []string{ksk, next}, []string{old}, 3, tag(next)},
		{"old ZSK withdrawn", []string{ksk, next}, nil, 2, tag(next)},
	}
	for _, p := range phases {
		cur.Store(load(p.keys, p.publish))
		testsupport.WaitFor(t, p.name, func() (bool, string) {
			keys := 0
			for _, r := range ask(dns.TypeDNSKEY).Answer {
				if r.Header().Rrtype == dns.TypeDNSKEY {
					keys++
				}
			}
			var by uint16
			for _, r := range ask(dns.TypeA).Answer {
				if sig, ok := r.(*dns.RRSIG); ok {
					by = sig.KeyTag
				}
			}
			return keys == p.dnskeys && by == p.signer, fmt.Sprintf("%d DNSKEYs, A signed by %d", keys, by)
		})
	}
}
