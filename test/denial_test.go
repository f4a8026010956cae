package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/testunbound"

	"github.com/miekg/dns"
)

// denialServer serves the demo nodes with the records api, a.deep (deep
// is an empty non-terminal) and www, signed with a new KSK and the denial
// line, and returns the server and the key. bare leaves the log plugin
// out, so that gslb writes its denials as bytes.
func denialServer(t *testing.T, denial string, bare bool) (*server, *dns.DNSKEY) {
	t.Helper()
	nodes, base, key := signedDemo(t, strings.NewReplacer("  - name: api.example.org\n", "  - name: a.deep.example.org\n  - name: api.example.org\n"))
	dnssec := "dnssec " + base
	if denial != "" {
		dnssec += " {\n            denial " + denial + "\n        }"
	}
	cf := gslbCorefile(t, nodes, dnssec)
	if bare {
		cf = strings.Replace(cf, "    log . "+logFormat+"\n", "", 1)
		if strings.Contains(cf, "log .") {
			t.Fatalf("The Corefile still logs:\n%s", cf)
		}
	}
	return startServer(t, cf), key
}

// denialCases are names before, between and after the zone's names (api,
// a.deep, www), under the empty non-terminal, below a name that does not
// exist, and types a name does not have.
var denialCases = []struct {
	name, qname, qtype string
	nxdomain           bool
}{
	{"before the first name", "aaa.example.org.", "A", true},
	{"between names", "mmm.example.org.", "A", true},
	{"after the last name", "zzz.example.org.", "A", true},
	{"below the empty non-terminal", "x.deep.example.org.", "A", true},
	{"two labels below nothing", "q.zzz.example.org.", "AAAA", true},
	{"wildcard label itself", "*.example.org.", "A", true},
	{"NODATA", "www.example.org.", "TXT", false},
	{"NODATA of the apex", "example.org.", "TXT", false},
	{"NODATA of a record's address type", "a.deep.example.org.", "HTTPS", false},
	{"empty non-terminal", "deep.example.org.", "A", false},
}

// The NSEC and NSEC3 chains prove every kind of denial to BIND's delv and
// to a validating unbound: a real NXDOMAIN (with the wildcard's denial) for
// names before, between and after the zone's names and below them, and
// NODATA for a type a name lacks and for an empty non-terminal. The proof
// comes from the chain (NSEC owners are the zone's names, NSEC3 owners
// their hashes), not a black lie; written as a message (behind the log
// plugin) or as bytes (bare).
func TestDenialChainValidates(t *testing.T) {
	delv := dnsTool(t, "delv")
	for _, mode := range []string{"nsec", "nsec3", "nsec3 0 -", "nsec3 1 aabbccdd", "nsec bare", "nsec3 bare"} {
		t.Run(strings.ReplaceAll(mode, " ", "_"), func(t *testing.T) {
			bare := strings.HasSuffix(mode, " bare")
			srv, key := denialServer(t, strings.TrimSuffix(mode, " bare"), bare)
			ds := key.ToDS(dns.SHA256)
			anchors := writeFile(t, t.TempDir(), "anchors.conf", fmt.Sprintf("trust-anchors {\n    example.org. static-ds %d %d %d \"%s\";\n};\n",
				ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest)))
			host, port, _ := net.SplitHostPort(srv.udp)
			ub := testunbound.Start(t, "example.org.", []*dns.DS{ds}, srv.udp)
			proof := "\tNSEC\t"
			if strings.HasPrefix(mode, "nsec3") {
				proof = "\tNSEC3\t"
			}
			for _, tc := range denialCases {
				t.Run(tc.name, func(t *testing.T) {
					qtype := dns.StringToType[tc.qtype]
					// Directly: the rcode, and the chain's records.
					m := newQuery(t, tc.qname, qtype, "")
					m.SetEdns0(1232, true)
					r := exchange(t, "tcp", srv.tcp, m)
					want := dns.RcodeSuccess
					if tc.nxdomain {
						want = dns.RcodeNameError
					}
					if r.Rcode != want || len(r.Answer) != 0 {
						t.Fatalf("Direct: rcode %s with %d answers, want %s:\n%s", dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[want], r)
					}
					ns := fmt.Sprint(r.Ns)
					if !strings.Contains(ns, proof) || strings.Contains(ns, `\000.`) {
						t.Errorf("Direct: want the chain's%srecords, no black lie:\n%s", proof, r)
					}
					verifyOwnerSets(t, key, r.Ns)

					out := runDNSTool(t, delv, "@"+host, "-p", port, "-4", "-a", anchors, "+root=example.org.", "+nosplit", tc.qname, tc.qtype)
					if !strings.Contains(out, "; negative response, fully validated\n") {
						t.Errorf("delv %s %s: want a validated negative response:\n%s", tc.qname, tc.qtype, out)
					}

					q := new(dns.Msg)
					q.SetQuestion(tc.qname, qtype)
					q.SetEdns0(1232, true)
					q.AuthenticatedData = true
					r = exchange(t, "tcp", ub, q)
					if r.Rcode != want || !r.AuthenticatedData || len(r.Answer) != 0 {
						t.Errorf("unbound: rcode %s AD %v, want %s with AD:\n%s", dns.RcodeToString[r.Rcode], r.AuthenticatedData, dns.RcodeToString[want], r)
					}
				})
			}
			// The positive answers validate beside the chain.
			q := new(dns.Msg)
			q.SetQuestion("a.deep.example.org.", dns.TypeA)
			q.SetEdns0(1232, true)
			if r := exchange(t, "tcp", ub, q); r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData || len(answers(r)) == 0 {
				t.Errorf("unbound a.deep.example.org A: want a validated answer:\n%s", r)
			}
			if proof == "\tNSEC3\t" {
				q.SetQuestion("example.org.", dns.TypeNSEC3PARAM)
				if r := exchange(t, "tcp", ub, q); r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData || len(r.Answer) < 2 {
					t.Errorf("unbound example.org NSEC3PARAM: want a validated answer:\n%s", r)
				}
			}
			p := map[string]string{"proof": strings.TrimSpace(strings.ToLower(proof))}
			if sumSeries(t, "coredns_gslb_dnssec_denials_total", p) == 0 {
				t.Errorf("coredns_gslb_dnssec_denials_total%v is 0", p)
			}
			if e := seriesValue(t, "coredns_gslb_dnssec_signature_expiry_timestamp_seconds", map[string]string{"zone": "example.org."}); time.Until(time.Unix(int64(e), 0)) < 6*24*time.Hour {
				t.Errorf("coredns_gslb_dnssec_signature_expiry_timestamp_seconds is %v, want about 8 days ahead", e)
			}
		})
	}
}

// verifyOwnerSets is verifyRRSIGs for a section of RRsets of one type but
// several owners, as a denial's NSEC or NSEC3 records are: each RRset is
// checked by itself.
func verifyOwnerSets(t *testing.T, key *dns.DNSKEY, section []dns.RR) {
	t.Helper()
	owners := map[string][]dns.RR{}
	for _, rr := range section {
		n := strings.ToLower(rr.Header().Name)
		owners[n] = append(owners[n], rr)
	}
	for _, rrs := range owners {
		verifyRRSIGs(t, key, rrs)
	}
}

// A node table reload builds the chain again: a record added by the
// reload exists for the proofs at once (NODATA with its own NSEC), and a
// name after it is denied by an NSEC naming it.
func TestDenialChainReload(t *testing.T) {
	nodes, base, key := signedDemo(t, strings.NewReplacer())
	srv := startServer(t, gslbCorefile(t, nodes, "dnssec "+base+"\n        reload 1s"))
	do := func(name string, qtype uint16) *dns.Msg {
		m := newQuery(t, name, qtype, "")
		m.SetEdns0(1232, true)
		return exchange(t, "tcp", srv.tcp, m)
	}
	if r := do("new.example.org.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Fatalf("Before the reload: want NXDOMAIN:\n%s", r)
	}
	demo, err := os.ReadFile(nodes)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(nodes), filepath.Base(nodes), strings.Replace(string(demo), "  - name: www.example.org\n", "  - name: www.example.org\n  - name: new.example.org\n", 1))
	testsupport.WaitFor(t, "the new record", func() (bool, string) {
		r := do("new.example.org.", dns.TypeA)
		return r.Rcode == dns.RcodeSuccess && len(answers(r)) > 0, r.String()
	})
	r := do("new.example.org.", dns.TypeTXT)
	if r.Rcode != dns.RcodeSuccess || !strings.Contains(fmt.Sprint(r.Ns), "new.example.org.\t60\tIN\tNSEC\twww.example.org. A ") {
		t.Errorf("NODATA of the new name: want its own NSEC:\n%s", r)
	}
	verifyOwnerSets(t, key, r.Ns)
	r = do("neu.example.org.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError || !strings.Contains(fmt.Sprint(r.Ns), "\tNSEC\tnew.example.org. ") {
		t.Errorf("A name before the new one: want NXDOMAIN with an NSEC naming it next:\n%s", r)
	}
	verifyOwnerSets(t, key, r.Ns)
}
