package geo

import (
	"errors"
	"fmt"

	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/internal/offheap"
)

// maxDBSize bounds a database file.
const maxDBSize = 1 << 34

// readOffHeap reads a database outside the Go heap (internal/offheap).
// Unlike a mapping of the file, a writer that rewrites the file in place
// can't pull pages from under a query. The memory is released once owner
// is unreachable; nothing read from it may outlive owner (decoded strings
// are copies).
func readOffHeap(path string, owner *DB) ([]byte, error) {
	f, size, err := atomicfile.Open(path, maxDBSize)
	if se := (*atomicfile.SizeError)(nil); errors.As(err, &se) {
		return nil, fmt.Errorf("%s: size %d", path, se.Size)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size <= 0 {
		return nil, fmt.Errorf("%s: size %d", path, size)
	}
	b, err := offheap.Read(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	offheap.Tie(owner, b)
	return b, nil
}

// offHeapUint32s copies s outside the Go heap, for a database's
// pointer-free tables that live as long as it.
func offHeapUint32s(s []uint32, owner *DB) []uint32 {
	out := offheap.Clone(s)
	offheap.Tie(owner, out)
	return out
}
