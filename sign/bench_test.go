package sign

import (
	"strconv"
	"testing"

	"github.com/miekg/dns"
)

const benchSOA = "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30"

// BenchmarkSignCached is an A answer whose signature is cached, the
// common case on the query path.
func BenchmarkSignCached(b *testing.B) {
	s := signer(b, 257)
	a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: []byte{192, 0, 2, 1}}
	m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, nil, nil)
	answer := make([]dns.RR, 1, 4)
	answer[0] = a
	m.Answer = answer
	s.Sign(m, "")
	b.ReportAllocs()
	for b.Loop() {
		m.Answer = answer[:1]
		s.Sign(m, "")
	}
}

// BenchmarkSignFirst is an A answer signed for the first time.
func BenchmarkSignFirst(b *testing.B) {
	s := signer(b, 257)
	m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, nil, nil)
	answer := make([]dns.RR, 1, 4)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		answer[0] = &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
			A: []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}}
		m.Answer = answer[:1]
		s.Sign(m, "")
	}
}

// BenchmarkDenyCached is a repeated NXDOMAIN.
func BenchmarkDenyCached(b *testing.B) {
	s := signer(b, 257)
	soa := rr(b, benchSOA)
	m := reply("nope.example.test.", dns.TypeA, dns.RcodeNameError, nil, nil)
	s.Sign(reply("nope.example.test.", dns.TypeA, dns.RcodeNameError, nil, []dns.RR{soa}), "")
	ns := make([]dns.RR, 1, 4)
	ns[0] = soa
	b.ReportAllocs()
	for b.Loop() {
		m.Rcode = dns.RcodeNameError
		m.Ns = ns[:1]
		s.Sign(m, "")
	}
}

// BenchmarkDenyFirst is an NXDOMAIN for a name not asked before: the
// NSEC black lie is signed (the SOA's signature is cached).
func BenchmarkDenyFirst(b *testing.B) {
	s := signer(b, 257)
	soa := rr(b, benchSOA)
	ns := make([]dns.RR, 1, 4)
	ns[0] = soa
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m := reply("n"+strconv.Itoa(i)+".example.test.", dns.TypeA, dns.RcodeNameError, nil, nil)
		m.Ns = ns[:1]
		s.Sign(m, "")
	}
}

// BenchmarkReply is a whole A answer with ECS, packed, unsigned and with
// a cached signature: what signing adds per answer, and to its size.
func BenchmarkReply(b *testing.B) {
	s := signer(b, 257)
	a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: []byte{192, 0, 2, 1}}
	for _, signed := range []bool{false, true} {
		b.Run(map[bool]string{false: "unsigned", true: "signed"}[signed], func(b *testing.B) {
			m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, nil, nil)
			answer := make([]dns.RR, 1, 4)
			answer[0] = a
			buf := make([]byte, 0, 1232)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				m.Answer = answer[:1]
				if signed {
					s.Sign(m, "")
				}
				out, err := m.PackBuffer(buf)
				if err != nil {
					b.Fatal(err)
				}
				n = len(out)
			}
			b.ReportMetric(float64(n), "bytes/msg")
		})
	}
}
