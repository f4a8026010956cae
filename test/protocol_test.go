package test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// protocolNodes has a record at the apex, one two labels below it (so that
// b.example.org is an empty non-terminal), and names its servers.
const protocolNodes = `nodes:
  - {id: hz, ipv4: [192.0.2.10], ipv6: ["2001:db8::10"], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: bj, ipv4: [198.51.100.10], country: CN, province: BJ, isp: unicom, lat: 39.9, lon: 116.4}
records:
  - name: example.org
  - name: a.b.example.org
nameservers: [ns1.example.net, ns2.example.net.]
`

// TestProtocol: empty non-terminals, the apex, transfers, other opcodes,
// and malformed EDNS, through a real CoreDNS.
func TestProtocol(t *testing.T) {
	nodes := writeFile(t, t.TempDir(), "nodes.yaml", protocolNodes)
	s := startServer(t, gslbCorefile(t, nodes, ""))
	plain := startServer(t, demoCorefile(t, ""))
	bareNodes := writeFile(t, t.TempDir(), "nodes.yaml", strings.Replace(protocolNodes, "nameservers: [ns1.example.net, ns2.example.net.]\n", "", 1))
	bare := startServer(t, gslbCorefile(t, bareNodes, "")) // no nameservers

	t.Run("answers", func(t *testing.T) {
		tests := []struct {
			srv    *server
			name   string
			qtype  uint16
			rcode  int
			answer []string // the answer section's types
			soa    bool     // an SOA in the authority section
		}{
			{s, "b.example.org", dns.TypeA, dns.RcodeSuccess, nil, true},
			{s, "c.b.example.org", dns.TypeA, dns.RcodeNameError, nil, true},
			{s, "a.b.example.org", dns.TypeA, dns.RcodeSuccess, []string{"A"}, false},
			{s, "example.org", dns.TypeA, dns.RcodeSuccess, []string{"A"}, false},
			{s, "example.org", dns.TypeSOA, dns.RcodeSuccess, []string{"SOA"}, false},
			{s, "example.org", dns.TypeNS, dns.RcodeSuccess, []string{"NS", "NS"}, false},
			{s, "example.org", dns.TypeMX, dns.RcodeSuccess, nil, true},
			{plain, "example.org", dns.TypeNS, dns.RcodeSuccess, []string{"NS", "NS"}, false},
			{plain, "example.org", dns.TypeSOA, dns.RcodeSuccess, []string{"SOA"}, false},
			{bare, "example.org", dns.TypeNS, dns.RcodeSuccess, nil, true},
		}
		for _, tc := range tests {
			r := exchange(t, "udp", tc.srv.udp, newQuery(t, tc.name, tc.qtype, ""))
			var types []string
			for _, rr := range r.Answer {
				types = append(types, dns.TypeToString[rr.Header().Rrtype])
			}
			soa := len(r.Ns) == 1 && r.Ns[0].Header().Rrtype == dns.TypeSOA
			if r.Rcode != tc.rcode || fmt.Sprint(types) != fmt.Sprint(tc.answer) || soa != tc.soa || !r.Authoritative {
				t.Errorf("%s %s: got %s %v SOA=%t AA=%t, want %s %v SOA=%t", tc.name, dns.TypeToString[tc.qtype],
					dns.RcodeToString[r.Rcode], types, soa, r.Authoritative, dns.RcodeToString[tc.rcode], tc.answer, tc.soa)
			}
		}
		r := exchange(t, "udp", s.udp, newQuery(t, "example.org", dns.TypeSOA, ""))
		if mname := r.Answer[0].(*dns.SOA).Ns; mname != "ns1.example.net." {
			t.Errorf("SOA MNAME %s, want the first name server ns1.example.net.", mname)
		}
		r = exchange(t, "udp", s.udp, newQuery(t, "example.org", dns.TypeNS, ""))
		if ns := r.Answer[1].(*dns.NS).Ns; ns != "ns2.example.net." {
			t.Errorf("Second NS %s, want ns2.example.net.", ns)
		}
	})

	t.Run("transfers and opcodes", func(t *testing.T) {
		for _, qtype := range []uint16{dns.TypeAXFR, dns.TypeIXFR} {
			m := newQuery(t, "example.org", qtype, "")
			if r := exchange(t, "tcp", s.tcp, m); r.Rcode != dns.RcodeRefused {
				t.Errorf("%s: rcode %s, want REFUSED", dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
			}
		}
		m := newQuery(t, "example.org", dns.TypeSOA, "")
		m.Opcode = dns.OpcodeNotify
		if r := exchange(t, "udp", s.udp, m); r.Rcode != dns.RcodeNotImplemented {
			t.Errorf("NOTIFY: rcode %s, want NOTIMP", dns.RcodeToString[r.Rcode])
		}
	})

	t.Run("malformed EDNS", func(t *testing.T) {
		ecs := ecsOption
		cookie := []byte{0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8}
		tests := []struct {
			name  string
			opts  [][]byte // the rdata of each OPT record
			rcode int
		}{
			{"valid", [][]byte{ecs(1, 24, 202, 101, 172)}, dns.RcodeSuccess},
			{"valid with a cookie", [][]byte{append(cookie, ecs(1, 24, 202, 101, 172)...)}, dns.RcodeSuccess},
			{"valid /20 in three bytes", [][]byte{ecs(1, 20, 202, 101, 160)}, dns.RcodeSuccess},
			{"two OPT records", [][]byte{ecs(1, 24, 202, 101, 172), nil}, dns.RcodeFormatError},
			{"/24 in one byte", [][]byte{ecs(1, 24, 202)}, dns.RcodeFormatError},
			{"/24 in four bytes", [][]byte{ecs(1, 24, 202, 101, 172, 0)}, dns.RcodeFormatError},
			{"/24 in one byte after a cookie", [][]byte{append(cookie, ecs(1, 24, 202)...)}, dns.RcodeFormatError},
			{"/48 in five bytes", [][]byte{ecs(2, 48, 0x24, 0x0e, 0, 0, 0)}, dns.RcodeFormatError},
			{"IPv4 /32 with IPv6 length", [][]byte{ecs(1, 32, make([]byte, 16)...)}, dns.RcodeFormatError},
		}
		for i, tc := range tests {
			id := uint16(2000 + i)
			r := rawExchange(t, s.udp, rawQuery(id, "a.b.example.org.", tc.opts...))
			if r.Rcode != tc.rcode {
				t.Errorf("%s: rcode %s, want %s", tc.name, dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
		}
	})

	t.Run("IPv4-mapped ECS", func(t *testing.T) {
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: 120, Address: net.ParseIP("::ffff:202.101.172.0")}
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{e}}
		o.SetUDPSize(1232)
		q.Extra = append(q.Extra, o)
		r := exchange(t, "udp", plain.udp, q)
		re := replyECS(r)
		if r.Rcode != dns.RcodeSuccess || re == nil || re.Family != 2 || re.SourceScope != 96+24 {
			t.Fatalf("Got %s with ECS %v, want NOERROR with family 2 and scope 120", dns.RcodeToString[r.Rcode], re)
		}
		if got := answerOf(r); got != "192.0.2.10" {
			t.Errorf("Answer %s, want the Zhejiang node 192.0.2.10", got)
		}
	})
}

// ecsOption is an ECS option on the wire, with exactly the address bytes given.
func ecsOption(family uint16, source uint8, addr ...byte) []byte {
	o := binary.BigEndian.AppendUint16(nil, dns.EDNS0SUBNET)
	o = binary.BigEndian.AppendUint16(o, uint16(4+len(addr)))
	o = binary.BigEndian.AppendUint16(o, family)
	o = append(o, source, 0)
	return append(o, addr...)
}

// rawQuery builds an A query with one OPT record per element of opts, each
// holding those bytes as its rdata.
func rawQuery(id uint16, qname string, opts ...[]byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0) // RD, QD=1 AN=0 NS=0
	b = binary.BigEndian.AppendUint16(b, uint16(len(opts)))
	for _, l := range dns.SplitDomainName(qname) {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, dns.TypeA)
	b = binary.BigEndian.AppendUint16(b, dns.ClassINET)
	for _, o := range opts {
		b = append(b, 0) // root owner
		b = binary.BigEndian.AppendUint16(b, dns.TypeOPT)
		b = binary.BigEndian.AppendUint16(b, 1232)
		b = append(b, 0, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(len(o)))
		b = append(b, o...)
	}
	return b
}
