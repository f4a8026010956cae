package test

import (
	"strings"
	"testing"
)

// TestDidYouMean: a real CoreDNS refuses a typo of a Corefile property, a
// node-table key or a probe key with the word it was meant to be.
func TestDidYouMean(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "nodes.yaml", adminNodes)
	const node = "nodes:\n  - id: a\n    ipv4: [192.0.2.10]\n    country: CN\n    province: ZJ\n    lat: 30.27\n    lon: 120.16\n"
	tests := []struct {
		name, nodes, extra string
		line, want         string // the error names the line and ends with want
	}{
		{"property", good, "tll 30", "", `unknown property "tll" (did you mean ttl?)`},
		{"sub-block property", good, "soa {\n mnmae ns1.example.net\n}", "", `soa: unknown property "mnmae" (did you mean mname?)`},
		{"node key", writeFile(t, dir, "provnce.yaml", strings.Replace(node, "    province: ZJ\n", "    provnce: ZJ\n", 1)+"records:\n  - name: www.example.org\n"), "",
			`line 5: `, `unknown key "provnce" (did you mean province?)`},
		{"table key", writeFile(t, dir, "record.yaml", node+"record:\n  - name: www.example.org\n"), "",
			`line 8: `, `unknown key "record" (did you mean records?)`},
		{"probe key", writeFile(t, dir, "probe.yaml", node+"    probe: {type: http, url: \"http://192.0.2.10/health\", expect_bdy: ok}\nrecords:\n  - name: www.example.org\n"), "",
			`line 8: `, `unknown key "expect_bdy" (did you mean expect_body?)`},
	}
	for _, tc := range tests {
		err := startFails(t, gslbCorefile(t, tc.nodes, tc.extra))
		if !strings.Contains(err.Error(), tc.line) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s... %s", tc.name, err, tc.line, tc.want)
		}
	}
}
