//go:build linux || darwin || freebsd

package yield

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, and whether it is known:
// where it is counted per thread and to the nanosecond, not per tick.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
