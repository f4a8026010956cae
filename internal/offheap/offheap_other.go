//go:build !unix

package offheap

// Make makes the slice on the heap where anonymous memory is not at
// hand.
func Make[T any](n int) []T { return make([]T, n) }

func Free[T any](s []T) {}

func Bytes() int { return 0 }

func Mapped[T any](s []T) int { return 0 }

func Tie[T, O any](owner *O, s []T) {}
