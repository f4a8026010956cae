package control

import (
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/config"
)

// newTestControl loads a gslb block whose relative paths resolve in dir.
func newTestControl(t testing.TB, dir, block string) *Control {
	t.Helper()
	d := caddyfile.NewDispenser("Testfile", strings.NewReader(block))
	o, err := config.Parse(&d, nil, dir, config.Unique{})
	if err != nil {
		t.Fatalf("Parse %q: %v", block, err)
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("Load %q: %v", block, err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}
