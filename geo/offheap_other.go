//go:build !unix

package geo

import (
	"os"
	"slices"
)

// readOffHeap reads the database onto the heap where anonymous memory is not
// at hand.
func readOffHeap(path string, _ *DB) ([]byte, error) { return os.ReadFile(path) }

// offHeapUint32s copies s onto the heap at its length.
func offHeapUint32s(s []uint32, _ *DB) []uint32 { return slices.Clone(s) }
