package test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// soaNodes is a node table with the apex and www as records; ttl is www's.
func soaNodes(ttl int) string {
	return fmt.Sprintf(`nodes:
  - {id: hz, ipv4: [192.0.2.10], country: CN, province: ZJ, lat: 30.27, lon: 120.16}
records:
  - {name: example.org}
  - {name: www.example.org, ttl: %d}
  - {name: a.deep.example.org}
nameservers: [ns1.example.org, ns2.example.org]
`, ttl)
}

// writeAt writes a file and sets its modification time.
func writeAt(t *testing.T, dir, name, data string, mod time.Time) string {
	t.Helper()
	p := writeFile(t, dir, name, data)
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

func apexSOA(t *testing.T, s *server) *dns.SOA {
	t.Helper()
	r := ask(t, s, "example.org", dns.TypeSOA, "")
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("Apex SOA: %v", r)
	}
	soa, ok := r.Answer[0].(*dns.SOA)
	if !ok {
		t.Fatalf("Apex SOA: answer %v", r.Answer[0])
	}
	return soa
}

// TestSOASerialFromContent: two instances given the same files answer the
// same serial, the files' newest modification time, whenever they
// started; a later file moves it forward and an earlier one never back.
func TestSOASerialFromContent(t *testing.T) {
	dir := t.TempDir()
	t1 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // after the demo databases' build date
	nodes := writeAt(t, dir, "nodes.yaml", soaNodes(30), t1)
	conf := gslbCorefile(t, nodes, "reload 1s")
	a := startServer(t, conf)
	b := startServer(t, conf)
	for _, s := range []*server{a, b} {
		soa := apexSOA(t, s)
		if soa.Serial != uint32(t1.Unix()) {
			t.Errorf("Serial %d, want %d, the node table's modification time", soa.Serial, t1.Unix())
		}
		want := dns.SOA{Ns: "ns1.example.org.", Mbox: "hostmaster.example.org.", Refresh: 14400, Retry: 3600, Expire: 1209600, Minttl: 300}
		if soa.Ns != want.Ns || soa.Mbox != want.Mbox || soa.Refresh != want.Refresh || soa.Retry != want.Retry ||
			soa.Expire != want.Expire || soa.Minttl != want.Minttl {
			t.Errorf("SOA %s, want MNAME %s RNAME %s refresh %d retry %d expire %d minimum %d", soa,
				want.Ns, want.Mbox, want.Refresh, want.Retry, want.Expire, want.Minttl)
		}
	}

	ttlOf := func(s *server) uint32 {
		r := ask(t, s, "www.example.org", dns.TypeA, "")
		if len(r.Answer) == 0 {
			return 0
		}
		return r.Answer[0].Header().Ttl
	}
	t2 := t1.Add(time.Hour)
	writeAt(t, dir, "nodes.yaml", soaNodes(40), t2)
	for _, s := range []*server{a, b} {
		testsupport.WaitFor(t, "the node table reloaded", func() (bool, string) { n := ttlOf(s); return n == 40, fmt.Sprint("ttl ", n) })
		if got := apexSOA(t, s).Serial; got != uint32(t2.Unix()) {
			t.Errorf("Serial after the reload %d, want %d", got, t2.Unix())
		}
	}

	// A file put back with an older time: the serial holds.
	writeAt(t, dir, "nodes.yaml", soaNodes(50), t1.Add(-time.Hour))
	for _, s := range []*server{a, b} {
		testsupport.WaitFor(t, "the node table reloaded", func() (bool, string) { n := ttlOf(s); return n == 50, fmt.Sprint("ttl ", n) })
		if got := apexSOA(t, s).Serial; got != uint32(t2.Unix()) {
			t.Errorf("Serial after an older file %d, want %d: it must never go back", got, t2.Unix())
		}
	}
}

// TestSOAOption sets every field of the synthesized SOA.
func TestSOAOption(t *testing.T) {
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", soaNodes(30))
	s := startServer(t, gslbCorefile(t, nodes, `soa {
            serial 2026120101
            refresh 20000
            retry 4000
            expire 700000
            minimum 600
            mname ns.example.net
            rname ops.example.net
        }`))
	got := apexSOA(t, s)
	want := &dns.SOA{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
		Ns: "ns.example.net.", Mbox: "ops.example.net.", Serial: 2026120101, Refresh: 20000, Retry: 4000, Expire: 700000, Minttl: 600}
	if got.String() != want.String() {
		t.Errorf("SOA %s, want %s", got, want)
	}
	r := ask(t, s, "nothere.example.org", dns.TypeA, "")
	if len(r.Ns) != 1 || r.Ns[0].String() != want.String() {
		t.Errorf("NXDOMAIN authority %v, want %s", r.Ns, want)
	}
}

// TestOneZoneOneSOA: with fallthrough to file, every negative answer and
// the apex SOA carry the zone file's SOA, whichever plugin answers.
func TestOneZoneOneSOA(t *testing.T) {
	dir := t.TempDir()
	zone := writeFile(t, dir, "db.example.org", `$ORIGIN example.org.
@     3600 IN SOA ns1.example.org. hostmaster.example.org. 2026120101 14400 3600 1209600 300
@     3600 IN NS  ns1.example.org.
@     3600 IN NS  ns2.example.org.
@     3600 IN MX  10 mail.example.org.
ns1   3600 IN A   127.0.0.1
ns2   3600 IN A   127.0.0.2
mail  3600 IN A   127.0.0.3
`)
	nodes := writeFile(t, dir, "nodes.yaml", soaNodes(30))
	s := startServer(t, fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    gslb {
        geoip %s
        nodes %s
        fallthrough
    }
    file %s example.org
}`, repoFile(t, "demo/gslb-demo-City.mmdb"), nodes, zone))
	want := "example.org.\t3600\tIN\tSOA\tns1.example.org. hostmaster.example.org. 2026120101 14400 3600 1209600 300"

	tests := []struct {
		name  string
		qtype uint16
		rcode int
		apex  bool // the SOA is the answer
	}{
		{"example.org", dns.TypeSOA, dns.RcodeSuccess, true},     // gslb: the apex is a record
		{"example.org", dns.TypeTXT, dns.RcodeSuccess, false},    // gslb NODATA
		{"example.org", dns.TypeAAAA, dns.RcodeSuccess, false},   // gslb: no node has IPv6
		{"www.example.org", dns.TypeMX, dns.RcodeSuccess, false}, // gslb NODATA
		{"nothere.example.org", dns.TypeA, dns.RcodeNameError, false},
		{"mail.example.org", dns.TypeTXT, dns.RcodeSuccess, false}, // file NODATA
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
			r := ask(t, s, tc.name, tc.qtype, "")
			if r.Rcode != tc.rcode {
				t.Fatalf("Rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			sec := r.Ns
			if tc.apex {
				sec = r.Answer
			}
			if len(sec) != 1 || sec[0].String() != want {
				t.Errorf("SOA %v, want %s", sec, want)
			}
		})
	}
}

// TestSOASerialAcrossCorefileReload: a Corefile reload that drops the file
// with the newest time keeps the serial.
func TestSOASerialAcrossCorefileReload(t *testing.T) {
	dir := t.TempDir()
	t1 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	nodes := writeAt(t, dir, "nodes.yaml", soaNodes(30), t1)
	ov := writeAt(t, dir, "overrides.yaml", "overrides:\n  - {cidr: 1.0.1.0/24, nodes: [hz]}\n", t1.Add(time.Hour))
	s := startServer(t, gslbCorefile(t, nodes, "overrides "+ov))
	want := uint32(t1.Add(time.Hour).Unix())
	if got := apexSOA(t, s).Serial; got != want {
		t.Fatalf("Serial %d, want %d, the overrides' time", got, want)
	}
	s.restart(t, gslbCorefile(t, nodes, ""))
	if got := apexSOA(t, s).Serial; got != want {
		t.Errorf("Serial after a Corefile reload without the overrides %d, want %d: it must never go back", got, want)
	}
}
