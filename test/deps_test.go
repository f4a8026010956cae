package test

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gslbdns/gslb"

// moduleDeps lists the module's packages that pkg imports, directly or
// not, outside tests.
func moduleDeps(t *testing.T, root, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		bp, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(p, module), "/")), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				walk(imp)
			}
		}
	}
	walk(pkg)
	delete(seen, pkg)
	return slices.Sorted(func(yield func(string) bool) {
		for p := range seen {
			if !yield(p) {
				return
			}
		}
	})
}

// TestDependencies: dependencies point one way. The tool does not link the
// plugin, the decision path does not reach into the control plane, and
// nothing but the root package's glue and the tool's validation builds
// on caddy's controller.
func TestDependencies(t *testing.T) {
	root := filepath.Dir(repoFile(t, "go.mod"))
	for _, tc := range []struct{ pkg, forbidden string }{
		{module + "/cmd/gslb", module},
		{module + "/engine", module},
		{module + "/decide", module + "/control"},
		{module + "/decide", module},
		{module + "/control", module},
		{module + "/config", module + "/control"},
		{module + "/canary", module + "/control"},
	} {
		if slices.Contains(moduleDeps(t, root, tc.pkg), tc.forbidden) {
			t.Errorf("%s imports %s", tc.pkg, tc.forbidden)
		}
	}
	// The server links the plugin: the walk sees through the packages.
	if !slices.Contains(moduleDeps(t, root, module+"/cmd/coredns"), module) {
		t.Errorf("Expected cmd/coredns to import %s", module)
	}
	// Only tests build a test controller.
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), "caddy.NewTestController") {
			t.Errorf("%s calls caddy.NewTestController outside a test", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
