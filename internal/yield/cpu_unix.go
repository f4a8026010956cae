//go:build unix

package yield

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, and whether it is known.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
