//go:build !unix

package geo

import "os"

// readOffHeap reads the database onto the heap where anonymous memory is not
// at hand.
func readOffHeap(path string, _ *DB) ([]byte, error) { return os.ReadFile(path) }
