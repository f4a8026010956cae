package yamlfile

import (
	"strings"
	"testing"
	"time"
)

type node struct {
	ID    string        `yaml:"id"`
	IPv4  []string      `yaml:"ipv4"`
	Lat   float64       `yaml:"lat"`
	Up    bool          `yaml:"up"`
	Count int           `yaml:"count"`
	Every time.Duration `yaml:"every"`
	Tags  []string      `yaml:"tags"`
	Probe *struct {
		Port int `yaml:"port"`
	} `yaml:"probe"`
}

type table struct {
	Nodes   []node `yaml:"nodes"`
	Records []struct {
		Name  string   `yaml:"name"`
		Nodes []string `yaml:"nodes"`
	} `yaml:"records"`
	Title string `yaml:"title"`
}

// TestErrorLines: a syntax error names the line where the problem is (the
// parser alone names where the block starts, or the line before a tab),
// and a value of the wrong type names its line, the entry, the field and
// what was wanted.
func TestErrorLines(t *testing.T) {
	const head = "nodes:\n  - id: hz-telecom\n    ipv4: [192.0.2.10]\n    lat: 30.27\n    up: true\n    count: 2\n"
	tests := []struct{ name, yaml, want string }{
		{"bad indent", head + "   lon: 120\nrecords: []\n", "line 7: not valid YAML: did not find expected '-' indicator (check this line's indentation against the lines above it)"},
		{"tab", head + "    count: 3\n\tlon: 120\n", "line 8: not valid YAML: found a tab character that violates indentation (indent with spaces)"},
		{"over-indented", head + "      every: 10s\n", "line 7: not valid YAML: mapping values are not allowed in this context (check this line's indentation"},
		{"list wanted", "nodes:\n  - id: hz-telecom\n    ipv4: 192.0.2.10\n", "line 3: nodes[0] (id hz-telecom): field ipv4: want a list, e.g. [192.0.2.10]"},
		{"number wanted", head + "  - id: sh\n    lat: \"north\"\n", `line 8: nodes[1] (id sh): field lat: want a number such as 30.27, got "north"`},
		{"bool wanted", "nodes:\n  - {id: a, up: maybe}\n", `line 2: nodes[0] (id a): field up: want true or false, got "maybe"`},
		{"whole number wanted", "nodes:\n  - {id: a, count: two}\n", `line 2: nodes[0] (id a): field count: want a whole number, got "two"`},
		{"duration wanted", "nodes:\n  - {id: a, every: soon}\n", `line 2: nodes[0] (id a): field every: want a duration such as 10s, got "soon"`},
		{"nested", "nodes:\n  - id: a\n    probe:\n      port: http\n", `line 4: nodes[0] (id a): field probe.port: want a whole number, got "http"`},
		{"list item", "nodes:\n  - id: a\n    tags: [x, [y]]\n", "line 3: nodes[0] (id a): field tags[1]: want a single value, got a list"},
		{"entry not a mapping", "nodes:\n  - hz-telecom\n", `line 2: nodes[0]: want a mapping (key: value), got "hz-telecom"`},
		{"by name", "records:\n  - name: www\n    nodes: a\n", "line 3: records[0] (name www): field nodes: want a list, e.g. [a]"},
		{"top-level", "title: [a]\n", "line 1: field title: want a single value, got a list"},
		{"top-level list", "nodes: {id: a}\n", "line 1: field nodes: want a list, got a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v table
			_, err := Decode([]byte(tc.yaml), &v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expected an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestErrorLineBounded: finding the line of a syntax error parses a
// bounded number of bytes: a mistake near the line the parser names is
// found in a large file, and one far from it costs a few parses at most
// (the parser's own line then stands).
func TestErrorLineBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("nodes:\n")
	for range 10000 {
		b.WriteString("  - id: a\n    lat: 1\n")
	}
	big := b.String()
	for _, tc := range []struct{ name, tail, want string }{
		{"tab at the end", "\tlon: 2\n", "line 20002: not valid YAML: found a tab character"},
		{"indent at the end", "   lon: 2\n", "line "},
	} {
		start := time.Now()
		var v table
		_, err := Decode([]byte(big+tc.tail), &v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected an error containing %q, got %v", tc.name, tc.want, err)
		}
		if d := time.Since(start); d > 2*time.Minute {
			t.Errorf("%s: finding the line took %v", tc.name, d)
		}
	}
}
