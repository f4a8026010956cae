// Package ratelog bounds a log line that repeats (a failure per query, a
// flood of bad tokens): at most one per period, with the count of those
// held back.
package ratelog

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Limit is one repeated line's limiter; the zero value is ready. It takes
// no lock: under a flood every dropped line comes here.
type Limit struct {
	last    atomic.Int64 // Unix ns of the last line written; 0: none yet
	dropped atomic.Int64
}

// Allow reports whether the line may be written now, at most once every
// period, and how many were held back since the last one written.
func (l *Limit) Allow(period time.Duration) (ok bool, dropped int) {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if last != 0 && now-last < int64(period) || !l.last.CompareAndSwap(last, now) {
		l.dropped.Add(1)
		return false, 0
	}
	return true, int(l.dropped.Swap(0))
}

// Note is what a written line adds about the dropped ones: "" for none.
func Note(dropped int) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more since the last such line)", dropped)
}
