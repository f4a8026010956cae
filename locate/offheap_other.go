//go:build !unix

package locate

// makeOffHeap makes the slice on the heap where anonymous memory is not at
// hand.
func makeOffHeap[T any](n int) []T { return make([]T, n) }

func freeOffHeap[T any](s []T) {}

func offHeapBytes() int { return 0 }
