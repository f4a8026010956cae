// Package splitmix holds the splitmix64 finalizer, the hash the spread,
// the ties and the canary's pick share: every bit of its input moves every
// bit of its result, cheaply.
package splitmix

// Mix is the splitmix64 finalizer.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
