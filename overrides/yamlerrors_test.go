package overrides

import (
	"strings"
	"testing"
)

// TestYAMLErrorLines: the overrides' YAML errors name the line where the
// problem is, the entry (by its cidr) and the field.
func TestYAMLErrorLines(t *testing.T) {
	known := func(string) bool { return true }
	tests := []struct{ name, yaml, want string }{
		{"bad indent", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [a]\n   note: x\n", "o.yaml: line 4: not valid YAML: did not find expected '-' indicator"},
		{"nodes not a list", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: a\n", "o.yaml: line 3: overrides[0] (cidr 203.0.113.0/24): field nodes: want a list, e.g. [a]"},
		{"lat not a number", "overrides:\n  - cidr: 203.0.113.0/24\n    location: {country: CN, lat: north, lon: 1}\n", `o.yaml: line 3: overrides[0] (cidr 203.0.113.0/24): field location.lat: want a number such as 30.27, got "north"`},
	}
	for _, tc := range tests {
		_, err := Parse("o.yaml", []byte(tc.yaml), known)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected an error containing %q, got %v", tc.name, tc.want, err)
		}
	}
}
