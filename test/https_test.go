package test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestHTTPSHints: for many client subnets, the HTTPS answer's hints are
// the A and AAAA answers for the same subnet, in order, with the table's
// SvcParams; a name without https gets NODATA; a cname winner gets an
// AliasMode record.
func TestHTTPSHints(t *testing.T) {
	demo, err := os.ReadFile(repoFile(t, "nodes.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	table := strings.Replace(string(demo), "  - name: www.example.org\n",
		"  - name: www.example.org\n    https: {alpn: [h2, h3], port: 443}\n", 1)
	nodes := writeFile(t, t.TempDir(), "nodes.yaml", table)
	s := startServer(t, gslbCorefile(t, nodes, "answers 2"))

	var subnets []string
	for _, p := range []string{"202.101.172", "202.106.0", "8.8.8", "61.139.2", "1.0.1", "203.0.113", "192.0.2"} {
		subnets = append(subnets, p+".0/24")
	}
	for i := 0; i < 64; i++ {
		subnets = append(subnets, fmt.Sprintf("%d.%d.%d.0/24", 1+i*3, (i*37)%256, (i*11)%256))
	}
	subnets = append(subnets, "2001:da8::/48", "2001:db8:1::/48", "")
	for _, sn := range subnets {
		r := ask(t, s, "www.example.org", dns.TypeHTTPS, sn)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("HTTPS for %q: %s", sn, r)
		}
		h, ok := r.Answer[0].(*dns.HTTPS)
		if !ok || h.Priority != 1 || h.Target != "." {
			t.Fatalf("HTTPS for %q: %s, want one ServiceMode record to .", sn, r.Answer[0])
		}
		var v4, v6 []string
		alpn, port := "", uint16(0)
		for _, kv := range h.Value {
			switch kv := kv.(type) {
			case *dns.SVCBIPv4Hint:
				for _, ip := range kv.Hint {
					v4 = append(v4, ip.String())
				}
			case *dns.SVCBIPv6Hint:
				for _, ip := range kv.Hint {
					v6 = append(v6, ip.String())
				}
			case *dns.SVCBAlpn:
				alpn = strings.Join(kv.Alpn, ",")
			case *dns.SVCBPort:
				port = kv.Port
			}
		}
		if alpn != "h2,h3" || port != 443 {
			t.Errorf("HTTPS for %q: alpn %q port %d, want h2,h3 and 443", sn, alpn, port)
		}
		a := inOrder(ask(t, s, "www.example.org", dns.TypeA, sn))
		aaaa := inOrder(ask(t, s, "www.example.org", dns.TypeAAAA, sn))
		if !slices.Equal(v4, a) || !slices.Equal(v6, aaaa) {
			t.Errorf("HTTPS for %q: hints %v %v, want the A and AAAA answers %v %v", sn, v4, v6, a, aaaa)
		}
	}
	if r := ask(t, s, "api.example.org", dns.TypeHTTPS, ""); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Errorf("HTTPS for a record without https: %s, want NODATA", r)
	}

	cn := writeFile(t, t.TempDir(), "nodes.yaml", hybridNodes+"    https: {alpn: [h2]}\n")
	s2 := startServer(t, gslbCorefile(t, cn, ""))
	r := ask(t, s2, "www.example.org", dns.TypeHTTPS, "61.139.2.0/24")
	if len(r.Answer) != 1 {
		t.Fatalf("HTTPS for Sichuan: %s, want one record", r)
	}
	if h, ok := r.Answer[0].(*dns.HTTPS); !ok || h.Priority != 0 || h.Target != "edge.vendor-cdn.example." || len(h.Value) != 0 {
		t.Errorf("HTTPS for Sichuan: %s, want AliasMode to edge.vendor-cdn.example.", r)
	}
}
