//go:build unix

package locate

import (
	"sync"
	"syscall"
	"unsafe"
)

// offHeapMin is the smallest slice worth a mapping of its own.
const offHeapMin = 64 << 10

// mapped are the mappings makeOffHeap made, by address and size: only
// those may be unmapped.
var mapped = struct {
	sync.Mutex
	m map[uintptr]int
}{m: map[uintptr]int{}}

// makeOffHeap returns n zeroed Ts in anonymous memory outside the Go heap,
// for the cache's pointer-free slots and index: they are never garbage
// while in use, so the collector need neither count them toward its goal
// (which lets the heap grow by as much again) nor scan them. T must hold
// no pointer. Small slices, and any when no mapping is to be had, are
// made on the heap. freeOffHeap releases the slice; nothing may use it
// after.
func makeOffHeap[T any](n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size < offHeapMin {
		return make([]T, n)
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]T, n)
	}
	p := unsafe.SliceData(b)
	mapped.Lock()
	mapped.m[uintptr(unsafe.Pointer(p))] = size
	mapped.Unlock()
	return unsafe.Slice((*T)(unsafe.Pointer(p)), n)
}

// freeOffHeap unmaps s when makeOffHeap mapped it; the collector frees
// the others.
func freeOffHeap[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	mapped.Lock()
	size, ok := mapped.m[uintptr(p)]
	delete(mapped.m, uintptr(p))
	mapped.Unlock()
	if ok {
		_ = syscall.Munmap(unsafe.Slice((*byte)(p), size))
	}
}

// offHeapBytes is what makeOffHeap has mapped and not yet unmapped.
func offHeapBytes() int {
	mapped.Lock()
	defer mapped.Unlock()
	n := 0
	for _, size := range mapped.m {
		n += size
	}
	return n
}
