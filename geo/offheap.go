package geo

import (
	"fmt"
	"io"
	"os"

	"github.com/gslbdns/gslb/internal/offheap"
)

// readOffHeap reads a database outside the Go heap (internal/offheap).
// Unlike a mapping of the file, a writer that rewrites the file in place
// can't pull pages from under a query. The memory is released once owner
// is unreachable; nothing read from it may outlive owner (decoded strings
// are copies).
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
	b := offheap.Make[byte](int(size))
	if _, err := io.ReadFull(f, b); err != nil {
		offheap.Free(b)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	offheap.Tie(owner, b)
	return b, nil
}

// offHeapUint32s copies s outside the Go heap, for a database's
// pointer-free tables that live as long as it; a small s is copied onto
// the heap at its length.
func offHeapUint32s(s []uint32, owner *DB) []uint32 {
	out := offheap.Make[uint32](len(s))
	copy(out, s)
	offheap.Tie(owner, out)
	return out
}
