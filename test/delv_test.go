package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// dnsTool is the path of a DNS tool the tests run, which make deps installs.
func dnsTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run `make deps` (or make test), which installs it", name)
	}
	return p
}

// runDNSTool runs a tool and returns its standard output and error together.
func runDNSTool(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// signedServer serves the demo table with https on www.example.org,
// and a ttl of 7200 on api.example.org, signed with a new KSK and denying
// with black lies, and returns the server and the key.
func signedServer(t *testing.T) (*server, *dns.DNSKEY) {
	t.Helper()
	nodes, base, key := signedDemo(t, strings.NewReplacer("  - name: www.example.org\n",
		"  - name: www.example.org\n    https: {alpn: [h2, h3], port: 443}\n",
		"    ttl: 30\n", "    ttl: 7200\n")) // api.example.org
	return startServer(t, gslbCorefile(t, nodes, "dnssec "+base+" {\n            denial black_lies\n        }")), key
}

// signedDemo writes the demo node table as edit rewrites it and a new KSK
// for example.org, and returns the table's file, the key's base name and
// the key.
func signedDemo(t *testing.T, edit *strings.Replacer) (nodes, base string, key *dns.DNSKEY) {
	t.Helper()
	dir := t.TempDir()
	base, key = writeZoneKey(t, dir, "example.org.", 257)
	demo, err := os.ReadFile(repoFile(t, "nodes.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "nodes.yaml", edit.Replace(string(demo))), base, key
}

// delv, BIND's validating lookup, with the zone's DS as its only trust
// anchor and asking CoreDNS alone, fully validates gslb's positive and
// negative answers.
func TestDNSSECDelv(t *testing.T) {
	delv := dnsTool(t, "delv")
	srv, key := signedServer(t)
	ds := key.ToDS(dns.SHA256)
	anchors := writeFile(t, t.TempDir(), "anchors.conf", fmt.Sprintf("trust-anchors {\n    example.org. static-ds %d %d %d \"%s\";\n};\n",
		ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest)))
	host, port, _ := net.SplitHostPort(srv.udp)

	tests := []struct {
		name, qname, qtype string
		negative           bool
		want               string // an RR of the answer
	}{
		{"A", "www.example.org.", "A", false, "IN\tA\t"},
		{"AAAA", "www.example.org.", "AAAA", false, "IN\tAAAA\t"},
		{"HTTPS", "www.example.org.", "HTTPS", false, "IN\tHTTPS\t1 . alpn=\"h2,h3\" port=443 ipv4hint="},
		{"DNSKEY", "example.org.", "DNSKEY", false, "IN\tDNSKEY\t257 3 13 "},
		{"SOA", "example.org.", "SOA", false, "IN\tSOA\t"},
		{"NODATA", "www.example.org.", "TXT", true, ""},
		{"NXDOMAIN black lie", "nothere.example.org.", "A", true, ""},
		{"NODATA HTTPS without https", "api.example.org.", "HTTPS", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := runDNSTool(t, delv, "@"+host, "-p", port, "-4", "-a", anchors, "+root=example.org.", "+nosplit", tc.qname, tc.qtype)
			want := "; fully validated\n"
			if tc.negative {
				want = "; negative response, fully validated\n"
			}
			// delv reports a negative answer as a failed resolution.
			if !strings.Contains(out, want) || strings.Contains(out, "unsigned") || !tc.negative && strings.Contains(out, "resolution failed") {
				t.Fatalf("delv %s %s: want %q:\n%s", tc.qname, tc.qtype, want, out)
			}
			if tc.negative && !strings.Contains(out, "; "+tc.qname+" NSEC \\000."+tc.qname+" ") {
				t.Errorf("delv %s %s: want the NSEC black lie:\n%s", tc.qname, tc.qtype, out)
			}
			if tc.want != "" {
				if !strings.Contains(out, tc.qname+"\t") || !strings.Contains(out, tc.want) || !strings.Contains(out, "\tRRSIG\t"+tc.qtype+" 13 ") {
					t.Errorf("delv %s %s: want %q and its RRSIG:\n%s", tc.qname, tc.qtype, tc.want, out)
				}
			}
		})
	}
	// A ttl above an hour stays: the RRSIG's original TTL is the RRset's,
	// so the validator does not cut it to 3600.
	out := runDNSTool(t, delv, "@"+host, "-p", port, "-4", "-a", anchors, "+root=example.org.", "+nosplit", "api.example.org.", "A")
	if !strings.Contains(out, "; fully validated\n") || !strings.Contains(out, "api.example.org.\t7200\tIN\tA\t") {
		t.Errorf("delv api.example.org A: want a validated TTL of 7200:\n%s", out)
	}
}

// kdig +dnssec's answers carry an RRSIG over each RRset that verifies
// against the zone's DNSKEY, positive and negative.
func TestDNSSECKdig(t *testing.T) {
	kdig := dnsTool(t, "kdig")
	srv, key := signedServer(t)
	host, port, _ := net.SplitHostPort(srv.udp)
	for _, q := range []struct{ qname, qtype, section string }{
		{"www.example.org.", "A", "answer"},
		{"www.example.org.", "AAAA", "answer"},
		{"www.example.org.", "HTTPS", "answer"},
		{"example.org.", "DNSKEY", "answer"},
		{"example.org.", "SOA", "answer"},
		{"api.example.org.", "A", "answer"},
		{"www.example.org.", "TXT", "authority"},
		{"nothere.example.org.", "A", "authority"},
	} {
		out := runDNSTool(t, kdig, "@"+host, "-p", port, "+dnssec", "+noall", "+"+q.section, q.qname, q.qtype)
		var rrs []dns.RR
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, ";") {
				continue
			}
			rr, err := dns.NewRR(l)
			if err != nil {
				t.Fatalf("kdig %s %s: line %q: %v\n%s", q.qname, q.qtype, l, err, out)
			}
			rrs = append(rrs, rr)
		}
		if len(rrs) < 2 {
			t.Fatalf("kdig %s %s: want an RRset and its RRSIG in the %s section:\n%s", q.qname, q.qtype, q.section, out)
		}
		verifyRRSIGs(t, key, rrs)
	}
}
