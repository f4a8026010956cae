package test

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestUnreachableNameservers: a name server, or the SOA's MNAME, that is
// in the zone but that gslb answers NXDOMAIN for (not a record, no
// fallthrough) is a warning at load; one that is a record, outside the
// zone or passed on by fallthrough is not.
func TestUnreachableNameservers(t *testing.T) {
	const ns1Record = "  - name: ns1.example.org\n    nodes: [hz-a]\n"
	for _, tc := range []struct {
		name, nodes, extra, want string
		nxdomain                 string // a name the server answers NXDOMAIN for
	}{
		{"default mname", adminNodes, "", "the SOA's MNAME ns1.dns.example.org. (the default MNAME, without nameservers in the node table) is in the zone", "ns1.dns.example.org."},
		{"in-zone ns", adminNodes + "nameservers: [ns1.example.org, ns2.example.net]\n", "", "name server ns1.example.org. (the node table's nameservers) is in the zone but not a record", "ns1.example.org."},
		{"soa mname", adminNodes + "nameservers: [ns2.example.net]\n", "soa {\n mname ns3.example.org\n}", "the SOA's MNAME ns3.example.org. (soa mname)", "ns3.example.org."},
		{"ns is a record", adminNodes + ns1Record + "nameservers: [ns1.example.org]\n", "", "", ""},
		{"ns outside", adminNodes + "nameservers: [ns1.example.net]\n", "", "", ""},
		{"fallthrough", adminNodes, "fallthrough", "", ""},
	} {
		logs := captureLog(t)
		dir := t.TempDir()
		city, asn := adminDBs(t, dir)
		s := startServer(t, corefile(city, asn, writeFile(t, dir, "nodes.yaml", tc.nodes), tc.extra))
		if tc.nxdomain != "" {
			if r := ask(t, s, tc.nxdomain, dns.TypeA, ""); r.Rcode != dns.RcodeNameError {
				t.Errorf("%s: expected NXDOMAIN for %s, got %s", tc.name, tc.nxdomain, dns.RcodeToString[r.Rcode])
			}
		}
		s.stop()
		got := logs.String()
		switch {
		case tc.want != "" && strings.Count(got, tc.want) != 1:
			t.Errorf("%s: expected one warning with %q, got\n%s", tc.name, tc.want, got)
		case tc.want != "" && !strings.Contains(got, "[WARNING]"):
			t.Errorf("%s: expected a WARNING, got\n%s", tc.name, got)
		case tc.want == "" && strings.Contains(got, "NXDOMAIN for it"):
			t.Errorf("%s: unexpected warning:\n%s", tc.name, got)
		}
	}
}
