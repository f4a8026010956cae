package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateYAMLErrorLines: the state file's YAML errors name the file,
// the line where the problem is, the entry and the field.
func TestStateYAMLErrorLines(t *testing.T) {
	known := func(string) bool { return true }
	tests := []struct{ name, yaml, want string }{
		{"bad indent", "drains:\n  - node: a\n    since: 2026-11-30T12:00:00Z\n   x: 1\n", "line 4: not valid YAML: did not find expected '-' indicator"},
		{"pin nodes not a list", "pins:\n  - cidr: 1.2.3.0/24\n    nodes: b\n", "line 3: pins[0] (cidr 1.2.3.0/24): field nodes: want a list, e.g. [b]"},
		{"percent not a number", "canary:\n  identity: x\n  percent: half\n", `line 3: field canary.percent: want a number such as 30.27, got "half"`},
	}
	for _, tc := range tests {
		path := filepath.Join(t.TempDir(), "state.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadState(path, 0, known)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: expected an error naming %s and containing %q, got %v", tc.name, path, tc.want, err)
		}
	}
}
