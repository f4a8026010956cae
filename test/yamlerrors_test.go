package test

import (
	"strings"
	"testing"
)

// TestYAMLErrorsAtStart: CoreDNS refuses a node table or an overrides
// file with a YAML mistake, naming the file, the line where the mistake
// is, the entry and the field.
func TestYAMLErrorsAtStart(t *testing.T) {
	dir := t.TempDir()
	const head = "nodes:\n  - id: hz-telecom\n    ipv4: [192.0.2.10]\n    country: CN\n    province: ZJ\n    isp: telecom\n"
	good := writeFile(t, dir, "good.yaml", head+"    lat: 30.27\n    lon: 120.16\nrecords:\n  - name: www.example.org\n")
	tests := []struct{ name, file, extra, want string }{
		{"bad indent", "indent.yaml", "", "line 7: not valid YAML: did not find expected '-' indicator"},
		{"tab", "tab.yaml", "", "line 8: not valid YAML: found a tab character"},
		{"ipv4", "ipv4.yaml", "", "line 3: nodes[0] (id hz-telecom): field ipv4: want a list, e.g. [192.0.2.10]"},
		{"lat", "lat.yaml", "", `line 7: nodes[0] (id hz-telecom): field lat: want a number such as 30.27, got "north"`},
		{"overrides", "ov.yaml", "overrides", "line 3: overrides[0] (cidr 203.0.113.0/24): field nodes: want a list, e.g. [hz-telecom]"},
	}
	bodies := map[string]string{
		"indent.yaml": head + "   lat: 30.27\nrecords:\n  - name: www.example.org\n",
		"tab.yaml":    head + "    lat: 30.27\n\tlon: 120.16\n",
		"ipv4.yaml":   "nodes:\n  - id: hz-telecom\n    ipv4: 192.0.2.10\n",
		"lat.yaml":    head + "    lat: \"north\"\n    lon: 120.16\nrecords:\n  - name: www.example.org\n",
		"ov.yaml":     "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: hz-telecom\n",
	}
	for _, tc := range tests {
		p := writeFile(t, dir, tc.file, bodies[tc.file])
		nodes, extra := p, ""
		if tc.extra == "overrides" {
			nodes, extra = good, "overrides "+p
		}
		err := startFails(t, gslbCorefile(t, nodes, extra))
		if msg := err.Error(); !strings.Contains(msg, p+": "+tc.want) {
			t.Errorf("%s: expected the error to name %s and contain %q, got %v", tc.name, p, tc.want, err)
		}
	}
}
