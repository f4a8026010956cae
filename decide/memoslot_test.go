package decide

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gslbdns/gslb/scoring"
)

// TestMemoSlotWords: an entry stored in a slot's words loads back field
// for field, over the ranges of every field.
func TestMemoSlotWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	floats := []float64{-1, 0, 0.5, 1e-300, 19_999.25, math.Inf(1), math.MaxFloat64}
	for range 2000 {
		x := memoEntry{tag: r.Uint64() | 1, epoch: r.Uint64(), place: r.Uint64(), seq: r.Uint64(), name: r.Uint64(),
			qtype: uint16(r.Uint32()), bits: uint8(r.Uint32()), table: r.Uint32()}
		for i := range x.addr {
			x.addr[i] = byte(r.Uint32())
		}
		d := &x.dec
		d.Node, d.Tier, d.Candidates = r.IntN(2000)-1, scoring.Tier(r.IntN(256)), r.IntN(1<<31)
		d.DistanceKm, d.Score, d.RTTMs = floats[r.IntN(len(floats))], r.Float64(), floats[r.IntN(len(floats))]
		d.Tied, d.Ramping, d.Shedding = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
		d.NOrder = r.IntN(scoring.MaxAnswers + 1)
		for i := range d.Order {
			d.Order[i] = int32(r.IntN(2000)) - 1
		}
		var s memoSlot
		if !s.store(&x) {
			t.Fatal("A free slot refused a store")
		}
		var got memoEntry
		if !s.load(&got) || got != x {
			t.Fatalf("Stored %+v\nloaded %+v", x, got)
		}
		y := x
		y.epoch++
		if other := (memoEntry{tag: 1, epoch: y.epoch}); s.stamp(&other) != stampOther {
			t.Fatal("A stamp over another entry than the one read went through")
		}
		z := y
		z.dec.Score++
		if s.stamp(&z) != stampKnown || !s.load(&got) || got != x {
			t.Fatalf("A stamp with another decision changed the entry: %+v", got)
		}
		if s.stamp(&y) != stamped || !s.load(&got) || got != y {
			t.Fatalf("A stamp over the entry read did not hold: %+v", got)
		}
	}
}

// TestMemoSlotTorn: readers of a slot that writers keep filling load an
// entry one writer stored whole, or nothing.
func TestMemoSlotTorn(t *testing.T) {
	entry := func(v uint64) memoEntry {
		x := memoEntry{tag: v | 1, epoch: v, place: v, seq: v, name: v, qtype: uint16(v), bits: uint8(v), table: uint32(v)}
		for i := range x.addr {
			x.addr[i] = byte(v)
		}
		x.dec.Node, x.dec.Candidates, x.dec.Score, x.dec.NOrder = int(v%1000), int(v%1000), float64(v), int(v%8)
		for i := range x.dec.Order {
			x.dec.Order[i] = int32(v % 1000)
		}
		return x
	}
	var s memoSlot
	first := entry(1)
	s.store(&first)
	stop := make(chan struct{})
	done := make(chan struct{})
	for w := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			for v := uint64(w + 2); ; v += 2 {
				select {
				case <-stop:
					return
				default:
				}
				x := entry(v)
				s.store(&x)
			}
		}()
	}
	loaded := 0
	for i := 0; i < 200000 || loaded == 0; i++ {
		var x memoEntry
		if s.load(&x) {
			loaded++
			if want := entry(x.epoch); x != want {
				close(stop)
				t.Fatalf("A torn entry: %+v", x)
			}
		}
		if i > 10_000_000 {
			break
		}
	}
	close(stop)
	<-done
	<-done
	if loaded == 0 {
		t.Error("No load succeeded")
	}
}
