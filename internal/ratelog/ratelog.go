// Package ratelog bounds a log line that repeats (a failure per query, a
// flood of bad tokens): at most one per period, with the count of those
// held back.
package ratelog

import (
	"fmt"
	"sync"
	"time"
)

// Limit is one repeated line's limiter; the zero value is ready.
type Limit struct {
	mu      sync.Mutex
	last    time.Time
	dropped int
}

// Allow reports whether the line may be written now, at most once every
// period, and how many were held back since the last one written.
func (l *Limit) Allow(period time.Duration) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < period {
		l.dropped++
		return false, 0
	}
	dropped, l.last, l.dropped = l.dropped, now, 0
	return true, dropped
}

// Note is what a written line adds about the dropped ones: "" for none.
func Note(dropped int) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more since the last such line)", dropped)
}
