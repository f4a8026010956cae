package offheap

import "testing"

// TestOffHeapSmallOnHeap: a slice below the mapping size stays on the
// heap, and freeing it does nothing.
func TestOffHeapSmallOnHeap(t *testing.T) {
	base := Bytes()
	s := Make[int32](16)
	if got := Bytes(); got != base {
		t.Errorf("Expected no mapping for 64 bytes, got %d bytes mapped (%d before)", got, base)
	}
	s[15] = 7
	Free(s)
	if s[15] != 7 {
		t.Error("Expected a heap slice untouched by Free")
	}
}
