package quality

import (
	"strings"
	"testing"
)

// TestYAMLErrorLines: the quality file's YAML errors name the line where
// the problem is, the row (by its node) and the field.
func TestYAMLErrorLines(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"tab", "quality:\n  - node: hz-telecom\n    rtt_ms: 12\n\tloss: 0\n", "q.yaml: line 4: not valid YAML: found a tab character"},
		{"rtt not a number", "quality:\n  - node: hz-telecom\n    from: {province: ZJ}\n    rtt_ms: fast\n", `q.yaml: line 4: quality[0] (node hz-telecom): field rtt_ms: want a number such as 30.27, got "fast"`},
		{"from not a mapping", "quality:\n  - node: hz-telecom\n    from: ZJ\n", `q.yaml: line 3: quality[0] (node hz-telecom): field from: want a mapping (key: value), got "ZJ"`},
	}
	for _, tc := range tests {
		_, err := Parse("q.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected an error containing %q, got %v", tc.name, tc.want, err)
		}
	}
}
