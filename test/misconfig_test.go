package test

import (
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
