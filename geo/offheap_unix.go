//go:build unix

package geo

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"syscall"
	"unsafe"
)

// readOffHeap reads a database into anonymous memory outside the Go heap:
// the garbage collector neither scans it nor counts it toward its goal, so
// a 60 MB database does not let the heap grow by another 60 MB. Unlike a
// mapping of the file, a writer that rewrites the file in place can't
// pull pages from under a query. The memory is unmapped once owner is
// unreachable; nothing read from it may outlive owner (decoded strings are
// copies).
func readOffHeap(path string, owner *DB) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size <= 0 || size > 1<<34 {
		return nil, fmt.Errorf("%s: size %d", path, size)
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return os.ReadFile(path) // no anonymous memory: the heap will do
	}
	if _, err := io.ReadFull(f, b); err != nil {
		syscall.Munmap(b)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	runtime.AddCleanup(owner, func(b []byte) { syscall.Munmap(b) }, b)
	return b, nil
}

// offHeapUint32s copies s into anonymous memory outside the Go heap, for a
// database's pointer-free tables that live as long as it: the collector
// then neither counts them toward its goal nor scans them. The memory is
// unmapped once owner is unreachable. A small s, or any when no memory is
// to be had, is copied onto the heap at its length.
func offHeapUint32s(s []uint32, owner *DB) []uint32 {
	size := len(s) * 4
	if size < 64<<10 {
		return slices.Clone(s)
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return slices.Clone(s)
	}
	out := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(s))
	copy(out, s)
	runtime.AddCleanup(owner, func(b []byte) { syscall.Munmap(b) }, b)
	return out
}
