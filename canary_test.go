package gslb

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/table"
)

func TestParseCanaryOptions(t *testing.T) {
	tests := []struct {
		name, block string
		wantErr     string
	}{
		{"defaults", "canary c.yaml 5", ""},
		{"salt and window", "canary c.yaml 5 {\n salt 0123456789abcdef\n rollback_window 10s\n}", ""},
		{"short salt", "canary c.yaml 5 {\n salt short\n}", "salt must be a secret of at least 16"},
		{"empty salt", "canary c.yaml 5 {\n salt \"\"\n}", "got 0 (an unset environment variable?)"},
		{"no salt", "canary c.yaml 5 {\n salt\n}", "Wrong argument count"},
		{"short window", "canary c.yaml 5 {\n rollback_window 100ms\n}", "rollback_window"},
		{"trust_ecs", "trust_ecs 192.0.2.0/24 198.51.100.7 2001:db8::/32", ""},
		{"trust_ecs empty", "trust_ecs", "Wrong argument count"},
		{"trust_ecs junk", "trust_ecs 192.0.2.0/33", `trust_ecs: "192.0.2.0/33" is not a CIDR`},
		{"trust_ecs mapped", "trust_ecs ::ffff:192.0.2.0/120", "IPv4-mapped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", "gslb {\ngeoip g.mmdb\nnodes n.yaml\n"+tc.block+"\n}")
			g, err := parseOptions(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			if cn := g.opts.canary; cn != nil {
				want := defaultRollbackWindow
				if strings.Contains(tc.block, "10s") {
					want = 10 * time.Second
				}
				if cn.window != want {
					t.Errorf("Expected rollback_window %s, got %s", want, cn.window)
				}
			}
			if tc.name == "trust_ecs" {
				want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("2001:db8::/32")}
				if len(g.opts.trustECS) != len(want) {
					t.Fatalf("Expected %v, got %v", want, g.opts.trustECS)
				}
				for i := range want {
					if g.opts.trustECS[i] != want[i] {
						t.Errorf("Expected %v, got %v", want, g.opts.trustECS)
					}
				}
			}
		})
	}
}

// TestCanaryCountsOncePerWindow: a subnet's decisions count for the
// rollback once per window, whatever their number; the next window
// counts it again.
func TestCanaryCountsOncePerWindow(t *testing.T) {
	cn := newCanary(canaryOpts{file: "c.yaml", percent: 50, rollbackCross: -1, rollbackMin: 1, window: time.Minute}, &table.Table{}, keysOf("test salt 0123456789"))
	a := locate.KeyOf(netip.MustParseAddr("1.0.1.7"))
	b := locate.KeyOf(netip.MustParseAddr("1.0.2.7"))
	t0 := cn.born
	for i := range 1000 {
		cn.count(true, true, false, a, t0.Add(time.Duration(i)*time.Millisecond))
		cn.count(false, true, true, b, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if cn.decided.Load() != 1 || cn.canaryCross.Load() != 1 || cn.stableSame.Load() != 1 {
		t.Fatalf("Expected each subnet counted once in a window, got decided %d, canary cross %d, stable same %d",
			cn.decided.Load(), cn.canaryCross.Load(), cn.stableSame.Load())
	}
	// The same /24 by another address, in the same window.
	cn.count(true, true, true, locate.KeyOf(netip.MustParseAddr("1.0.1.200")), t0.Add(59*time.Second))
	if cn.decided.Load() != 1 {
		t.Errorf("Expected the /24 counted once, got %d", cn.decided.Load())
	}
	cn.count(true, true, false, a, t0.Add(61*time.Second))
	cn.count(true, true, false, a, t0.Add(62*time.Second))
	if cn.decided.Load() != 2 || cn.canaryCross.Load() != 2 {
		t.Errorf("Expected the subnet counted again in the next window, got decided %d", cn.decided.Load())
	}
}

// TestCanaryPicks: the salt decides the subnets; raising the share only
// adds subnets; a share is near its percent.
func TestCanaryPicks(t *testing.T) {
	o := canaryOpts{file: "c.yaml", percent: 10, rollbackCross: -1, window: time.Minute}
	x := newCanary(o, &table.Table{}, keysOf("salt of deployment x"))
	y := newCanary(o, &table.Table{}, keysOf("salt of deployment y"))
	var keys []locate.Key
	for i := range 20000 {
		keys = append(keys, locate.KeyOf(netip.AddrFrom4([4]byte{1, byte(i >> 8), byte(i), 0})))
	}
	in := map[locate.Key]bool{}
	same := 0
	for _, k := range keys {
		in[k] = x.picks(k)
		if x.picks(k) == y.picks(k) {
			same++
		}
	}
	// Independent draws at 10% agree on 0.9²+0.1² = 82% of the subnets.
	if f := float64(same) / float64(len(keys)); f > 0.86 {
		t.Errorf("Expected two salts to pick independent subnets, %.1f%% agree", 100*f)
	}
	x.setPercent(30)
	n := 0
	for _, k := range keys {
		if in[k] && !x.picks(k) {
			t.Fatalf("%v left the canary when the share rose", k)
		}
		if x.picks(k) {
			n++
		}
	}
	if f := float64(n) / float64(len(keys)); f < 0.28 || f > 0.32 {
		t.Errorf("Expected 30%% ± 2%% at 30, got %.1f%%", 100*f)
	}
}

// BenchmarkCanaryCount is the query path's canary work: the pick and the
// window's count, from all cores on 4,096 subnets.
func BenchmarkCanaryCount(b *testing.B) {
	cn := newCanary(canaryOpts{file: "c.yaml", percent: 50, rollbackCross: -1, rollbackMin: 1 << 40, window: time.Minute}, &table.Table{}, keysOf("bench salt 0123456789"))
	keys := make([]locate.Key, 4096)
	for i := range keys {
		keys[i] = locate.KeyOf(netip.AddrFrom4([4]byte{1, byte(i >> 8), byte(i), 0}))
	}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i&4095]
			cn.count(cn.picks(k), true, true, k, now)
			i++
		}
	})
}
