package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

// startErr starts CoreDNS from corefile, which must fail, and returns the
// error.
func startErr(t *testing.T, corefile string) error {
	t.Helper()
	mu.Lock()
	inst, err := caddy.Start(input(corefile))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
		t.Fatalf("Expected the start to fail:\n%s", corefile)
	}
	return err
}

// TestOrderAfterCache: a build that puts gslb after cache (plugin.cfg with
// gslb appended) must refuse to start a block with both, naming the fix.
func TestOrderAfterCache(t *testing.T) {
	cf := strings.Replace(demoCorefile(t, ""), "metadata", "metadata\n    cache 30", 1)
	mu.Lock()
	saved := dnsserver.Directives
	dirs := slices.DeleteFunc(slices.Clone(saved), func(d string) bool { return d == "gslb" })
	dnsserver.Directives = append(dirs, "gslb")
	caddy.Quiet, dnsserver.Quiet = true, true
	inst, err := caddy.Start(input(cf))
	dnsserver.Directives = saved
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
		t.Fatal("Expected the start to fail with gslb after cache")
	}
	want := `plugin/gslb: the plugin chain runs cache before gslb, so cached answers would ignore where clients are: rebuild CoreDNS with the plugin.cfg line "gslb:github.com/gslbdns/gslb" before "cache:cache"`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Expected %q, got %v", want, err)
	}
	// Our build's order, and a block without cache in the other order, start.
	startServer(t, cf)
	mu.Lock()
	dnsserver.Directives = append(slices.DeleteFunc(slices.Clone(saved), func(d string) bool { return d == "gslb" }), "gslb")
	inst, err = caddy.Start(input(demoCorefile(t, "")))
	dnsserver.Directives = saved
	mu.Unlock()
	if err != nil {
		t.Fatalf("A block without cache: %v", err)
	}
	inst.ShutdownCallbacks()
	inst.Stop()
}

// TestCheckLikeServer: gslb check fails exactly where a start from the
// same Corefile fails: an unknown directive, a directive the build lacks,
// gslb after cache; with root, relative paths resolve as the server
// resolves them.
func TestCheckLikeServer(t *testing.T) {
	dir, _, text := toolSetup(t, toolNodes, "")
	city := filepath.Join(dir, "city.mmdb")
	if _, err := os.Stat(city); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	relative := strings.NewReplacer(dir+string(filepath.Separator), "").Replace(text)
	if relative == text {
		t.Fatal("fixture paths are not under the temp dir")
	}
	rooted := strings.Replace(relative, "bind 127.0.0.1", "bind 127.0.0.1\n    root "+dir, 1)
	elsewhere := strings.Replace(relative, "bind 127.0.0.1", "bind 127.0.0.1\n    root "+t.TempDir(), 1)
	for _, tc := range []struct {
		name, corefile string
		ok             bool
		want           string
	}{
		{"root", rooted, true, ""},
		{"root elsewhere", elsewhere, false, "nodes.yaml"},
		{"unknown directive", strings.Replace(text, "metadata", "metadata\n    gslbb", 1), false, "Unknown directive 'gslbb'"},
		{"plugin not built", strings.Replace(text, "metadata", "metadata\n    kubernetes", 1), false, "no action found for directive 'kubernetes'"},
		{"bad stock plugin", strings.Replace(text, "metadata", "metadata\n    tls "+filepath.Join(dir, "missing.pem")+" "+filepath.Join(dir, "missing.key"), 1), false, "missing.pem"},
		{"stock plugins", strings.Replace(text, "metadata", "metadata\n    any\n    chaos\n    nsid gslb\n    root "+dir, 1), true, ""},
	} {
		conf := writeFile(t, dir, "Corefile."+strings.ReplaceAll(tc.name, " ", "-"), tc.corefile)
		out, stderr, code := runTool(t, "check", "-conf", conf)
		mu.Lock()
		inst, err := startFile(conf)
		if err == nil {
			inst.ShutdownCallbacks()
		}
		mu.Unlock()
		if tc.ok {
			if err != nil || code != 0 || out != "ok\n" {
				t.Errorf("%s: expected both to start, got server %v, check %d %q %q", tc.name, err, code, out, stderr)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: CoreDNS started", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: expected the server's error to contain %q, got %v", tc.name, tc.want, err)
		}
		if code != 1 || strings.TrimSpace(stderr) != err.Error() {
			t.Errorf("%s: expected exit 1 and the server's error\n%q, got %d\n%q", tc.name, err.Error(), code, stderr)
		}
	}
}
