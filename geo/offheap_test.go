package geo

import (
	"runtime"
	"slices"
	"testing"
)

// TestOffHeapUint32s: a wide table copied out of the heap reads the same,
// small or large, and outlives a collection while its owner lives.
func TestOffHeapUint32s(t *testing.T) {
	owner := &DB{}
	for _, n := range []int{0, 10, 1 << 15, 1<<16 + 3} {
		s := make([]uint32, n, n+n/4)
		for i := range s {
			s[i] = uint32(i*7 + 1)
		}
		got := offHeapUint32s(s, owner)
		runtime.GC()
		if !slices.Equal(got, s) {
			t.Errorf("Expected %d values copied as they are", n)
		}
		if cap(got) > len(got)+len(got)/8+8 {
			t.Errorf("Expected the copy of %d values at about their length, cap %d", n, cap(got))
		}
	}
	runtime.KeepAlive(owner)
}
