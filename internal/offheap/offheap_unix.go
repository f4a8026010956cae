//go:build unix

// Package offheap makes pointer-free slices in anonymous memory outside
// the Go heap, which the collector neither scans nor counts toward its
// goal (a 60 MB table would otherwise let the heap grow by as much again).
package offheap

import (
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// minSize is the smallest slice worth a mapping of its own.
const minSize = 64 << 10

// mapped are the mappings Make made, by address and size: only
// those may be unmapped.
var mapped = struct {
	sync.Mutex
	m map[uintptr]int
}{m: map[uintptr]int{}}

// Make returns n zeroed Ts in anonymous memory outside the Go heap,
// for pointer-free tables: the collector need neither count them toward its goal
// (which lets the heap grow by as much again) nor scan them. T must hold
// no pointer. Small slices, and any when no mapping is to be had, are
// made on the heap. Free (or Tie) releases the slice; nothing may use
// it after.
func Make[T any](n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size < minSize {
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

// Free unmaps s when Make mapped it; the collector frees
// the others.
func Free[T any](s []T) {
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

// Mapped is the size of the mapping Make made for s, 0 when s is on
// the heap or freed: a test's measure of one table, which Bytes (shared
// by every table, freed by the collector at its own time) is not.
func Mapped[T any](s []T) int {
	if cap(s) == 0 {
		return 0
	}
	mapped.Lock()
	defer mapped.Unlock()
	return mapped.m[uintptr(unsafe.Pointer(unsafe.SliceData(s)))]
}

// Bytes is what Make has mapped and not yet unmapped.
func Bytes() int {
	mapped.Lock()
	defer mapped.Unlock()
	n := 0
	for _, size := range mapped.m {
		n += size
	}
	return n
}

// Tie frees s once owner is unreachable: for a table that lives as long
// as what holds it. Nothing read from s may outlive owner.
func Tie[T, O any](owner *O, s []T) {
	runtime.AddCleanup(owner, func(s []T) { Free(s) }, s)
}
