package canary

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/table"
)

// TestCanaryCountsOncePerWindow: a subnet's decisions count for the
// rollback once per window, whatever their number; the next window
// counts it again.
func TestCanaryCountsOncePerWindow(t *testing.T) {
	cn := New(config.Canary{File: "c.yaml", Percent: 50, RollbackCross: -1, RollbackMin: 1, Window: time.Minute}, &table.Table{}, KeysOf("test salt 0123456789"))
	a := locate.KeyOf(netip.MustParseAddr("1.0.1.7"))
	b := locate.KeyOf(netip.MustParseAddr("1.0.2.7"))
	t0 := cn.born
	for i := range 1000 {
		cn.Count(true, true, false, a, t0.Add(time.Duration(i)*time.Millisecond))
		cn.Count(false, true, true, b, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if cn.decided.Load() != 1 || cn.canaryCross.Load() != 1 || cn.stableSame.Load() != 1 {
		t.Fatalf("Expected each subnet counted once in a window, got decided %d, canary cross %d, stable same %d",
			cn.decided.Load(), cn.canaryCross.Load(), cn.stableSame.Load())
	}
	// The same /24 by another address, in the same window.
	cn.Count(true, true, true, locate.KeyOf(netip.MustParseAddr("1.0.1.200")), t0.Add(59*time.Second))
	if cn.decided.Load() != 1 {
		t.Errorf("Expected the /24 counted once, got %d", cn.decided.Load())
	}
	cn.Count(true, true, false, a, t0.Add(61*time.Second))
	cn.Count(true, true, false, a, t0.Add(62*time.Second))
	if cn.decided.Load() != 2 || cn.canaryCross.Load() != 2 {
		t.Errorf("Expected the subnet counted again in the next window, got decided %d", cn.decided.Load())
	}
}

// TestCanaryPicks: the salt decides the subnets; raising the share only
// adds subnets; a share is near its percent.
func TestCanaryPicks(t *testing.T) {
	o := config.Canary{File: "c.yaml", Percent: 10, RollbackCross: -1, Window: time.Minute}
	x := New(o, &table.Table{}, KeysOf("salt of deployment x"))
	y := New(o, &table.Table{}, KeysOf("salt of deployment y"))
	var keys []locate.Key
	for i := range 20000 {
		keys = append(keys, locate.KeyOf(netip.AddrFrom4([4]byte{1, byte(i >> 8), byte(i), 0})))
	}
	in := map[locate.Key]bool{}
	same := 0
	for _, k := range keys {
		in[k] = x.Picks(k)
		if x.Picks(k) == y.Picks(k) {
			same++
		}
	}
	// Independent draws at 10% agree on 0.9²+0.1² = 82% of the subnets.
	if f := float64(same) / float64(len(keys)); f > 0.86 {
		t.Errorf("Expected two salts to pick independent subnets, %.1f%% agree", 100*f)
	}
	x.SetPercent(30)
	n := 0
	for _, k := range keys {
		if in[k] && !x.Picks(k) {
			t.Fatalf("%v left the canary when the share rose", k)
		}
		if x.Picks(k) {
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
	cn := New(config.Canary{File: "c.yaml", Percent: 50, RollbackCross: -1, RollbackMin: 1 << 40, Window: time.Minute}, &table.Table{}, KeysOf("bench salt 0123456789"))
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
			cn.Count(cn.Picks(k), true, true, k, now)
			i++
		}
	})
}
