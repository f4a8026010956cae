package test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestNegative checks NXDOMAIN and NODATA with the synthesized SOA, and
// fallthrough to the file plugin for names not in the node table.
func TestNegative(t *testing.T) {
	dir := t.TempDir()
	zone := writeFile(t, dir, "db.example.org", `$ORIGIN example.org.
@     3600 IN SOA ns.file.example.org. admin.file.example.org. 2024010101 7200 3600 1209600 3600
@     3600 IN NS  ns.file.example.org.
other 3600 IN A   10.1.2.3
`)
	plain := startServer(t, demoCorefile(t, ""))
	fall := startServer(t, fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    gslb {
        geoip %s
        asn %s
        nodes %s
        fallthrough
    }
    file %s example.org
}`, repoFile(t, "demo/gslb-demo-City.mmdb"), repoFile(t, "demo/gslb-demo-ASN.mmdb"), repoFile(t, "nodes.example.yaml"), zone))

	const gslbSOA, fileSOA = "ns1.example.net.", "ns.file.example.org." // the demo table's first name server
	tests := []struct {
		srv    *server
		name   string
		qtype  uint16
		rcode  int
		answer string // A addresses
		soa    string // the SOA's NS in the authority section, "" for none
	}{
		{plain, "nothere.example.org", dns.TypeA, dns.RcodeNameError, "", gslbSOA},
		{plain, "deep.www.example.org", dns.TypeAAAA, dns.RcodeNameError, "", gslbSOA},
		{plain, "www.example.org", dns.TypeTXT, dns.RcodeSuccess, "", gslbSOA},
		{plain, "api.example.org", dns.TypeMX, dns.RcodeSuccess, "", gslbSOA},
		{plain, "other.example.org", dns.TypeA, dns.RcodeNameError, "", gslbSOA},
		{fall, "other.example.org", dns.TypeA, dns.RcodeSuccess, "10.1.2.3", ""},
		{fall, "nothere.example.org", dns.TypeA, dns.RcodeNameError, "", fileSOA},
		{fall, "www.example.org", dns.TypeTXT, dns.RcodeSuccess, "", fileSOA},
		{fall, "www.example.org", dns.TypeA, dns.RcodeSuccess, "192.0.2.10", ""},
	}
	for _, tc := range tests {
		label := "plain"
		if tc.srv == fall {
			label = "fallthrough"
		}
		t.Run(label+"/"+tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
			r := exchange(t, "udp", tc.srv.udp, newQuery(t, tc.name, tc.qtype, "202.101.172.0/24"))
			if r.Rcode != tc.rcode {
				t.Fatalf("Rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			if !r.Authoritative {
				t.Errorf("AA bit not set")
			}
			if got := answerOf(r); got != tc.answer {
				t.Errorf("Answer %q, want %q", got, tc.answer)
			}
			if tc.answer == "" && len(r.Answer) != 0 {
				t.Errorf("Answer section %v, want empty", r.Answer)
			}
			var soa *dns.SOA
			for _, rr := range r.Ns {
				if s, ok := rr.(*dns.SOA); ok {
					soa = s
				}
			}
			switch {
			case tc.soa == "" && soa != nil:
				t.Errorf("Unexpected SOA %s", soa)
			case tc.soa != "" && soa == nil:
				t.Errorf("No SOA in the authority section: %v", r.Ns)
			case tc.soa != "" && soa.Ns != tc.soa:
				t.Errorf("SOA %s, want one with NS %s", soa, tc.soa)
			case soa != nil && soa.Hdr.Name != "example.org.":
				t.Errorf("SOA owner %s, want example.org.", soa.Hdr.Name)
			}
		})
	}
}

// TestMalformedECS sends hand-made packets: a malformed ECS option gets FORMERR.
func TestMalformedECS(t *testing.T) {
	s := startServer(t, demoCorefile(t, ""))
	tests := []struct {
		name   string
		family uint16
		source uint8
		addr   []byte
		rcode  int
	}{
		{"valid", 1, 24, []byte{202, 101, 172}, dns.RcodeSuccess},
		{"valid zero prefix", 1, 0, nil, dns.RcodeSuccess},
		{"unknown family 3", 3, 24, []byte{1, 2, 3}, dns.RcodeFormatError},
		{"ipv4 prefix 33", 1, 33, []byte{1, 2, 3, 4, 5}, dns.RcodeFormatError},
		{"ipv6 prefix 129", 2, 129, make([]byte, 17), dns.RcodeFormatError},
		{"bits after /24", 1, 24, []byte{1, 2, 3, 4}, dns.RcodeFormatError},
		{"bits after /20", 1, 20, []byte{1, 2, 3}, dns.RcodeFormatError},
		{"ipv6 bits after /32", 2, 32, []byte{0x20, 0x01, 0x0d, 0xa8, 0x01}, dns.RcodeFormatError},
		{"family 0 with a prefix", 0, 8, []byte{1}, dns.RcodeFormatError},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := uint16(1000 + i)
			r := rawExchange(t, s.udp, rawECSQuery(id, "www.example.org.", tc.family, tc.source, tc.addr))
			if r.Id != id {
				t.Fatalf("Reply id %d, want %d", r.Id, id)
			}
			if r.Rcode != tc.rcode {
				t.Fatalf("Rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			if tc.rcode == dns.RcodeSuccess && len(r.Answer) == 0 {
				t.Errorf("No answer to a well-formed query")
			}
		})
	}
}

// rawECSQuery builds an A query with one OPT RR holding one ECS option,
// byte by byte, so that it can be malformed.
func rawECSQuery(id uint16, qname string, family uint16, source uint8, addr []byte) []byte {
	return rawQuery(id, qname, ecsOption(family, source, addr...))
}

func rawExchange(t *testing.T, addr string, pkt []byte) *dns.Msg {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(pkt); err != nil {
		t.Fatalf("Cannot send: %v", err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("No reply: %v", err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		t.Fatalf("Cannot unpack the reply: %v", err)
	}
	return r
}
