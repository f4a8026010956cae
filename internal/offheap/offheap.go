package offheap

import "io"

// Read reads n bytes of r into a slice from Make; on an error it frees
// the slice.
func Read(r io.Reader, n int) ([]byte, error) {
	b := Make[byte](n)
	if _, err := io.ReadFull(r, b); err != nil {
		Free(b)
		return nil, err
	}
	return b, nil
}

// Clone copies s into a slice from Make.
func Clone[T any](s []T) []T {
	out := Make[T](len(s))
	copy(out, s)
	return out
}
