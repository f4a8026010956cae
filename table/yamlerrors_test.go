package table

import (
	"strings"
	"testing"
)

// TestYAMLErrorLines: the node table's YAML errors name the line where
// the problem is, the node and the field, and what was wanted.
func TestYAMLErrorLines(t *testing.T) {
	const head = "nodes:\n  - id: hz-telecom\n    ipv4: [192.0.2.10]\n    country: CN\n    province: ZJ\n    isp: telecom\n"
	tests := []struct{ name, yaml, want string }{
		{"bad indent", head + "   lat: 30.27\nrecords:\n  - name: www\n", "nodes.yaml: line 7: not valid YAML: did not find expected '-' indicator"},
		{"tab", head + "    lat: 30.27\n\tlon: 120.16\n", "nodes.yaml: line 8: not valid YAML: found a tab character"},
		{"ipv4 not a list", "nodes:\n  - id: hz-telecom\n    ipv4: 192.0.2.10\n", "nodes.yaml: line 3: nodes[0] (id hz-telecom): field ipv4: want a list, e.g. [192.0.2.10]"},
		{"lat not a number", head + "    lat: \"north\"\n", `nodes.yaml: line 7: nodes[0] (id hz-telecom): field lat: want a number such as 30.27, got "north"`},
		{"record nodes", head + "records:\n  - name: www\n    nodes: hz-telecom\n", "nodes.yaml: line 9: records[0] (name www): field nodes: want a list, e.g. [hz-telecom]"},
	}
	for _, tc := range tests {
		_, err := Parse("nodes.yaml", []byte(tc.yaml), testZones, 60)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected an error containing %q, got %v", tc.name, tc.want, err)
		}
	}
}
