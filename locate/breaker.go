package locate

import (
	"sync"
	"time"
)

// breaker opens after threshold consecutive failures and refuses calls for
// window; after that one trial call (half-open) decides whether it closes.
type breaker struct {
	threshold int
	window    time.Duration
	onChange  func(open bool) // may be nil

	mu        sync.Mutex
	failures  int
	open      bool
	openUntil time.Time
	trial     bool // the half-open trial call is in flight
}

// allow reports whether a call may be made now. A true result must be
// followed by done.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true
	}
	if b.trial || now.Before(b.openUntil) {
		return false
	}
	b.trial = true
	return true
}

// done records the outcome of an allowed call.
func (b *breaker) done(now time.Time, ok bool) {
	b.mu.Lock()
	wasOpen := b.open
	b.trial = false
	if ok {
		b.failures = 0
		b.open = false
	} else {
		b.failures++
		if b.open || b.failures >= b.threshold {
			b.open = true
			b.openUntil = now.Add(b.window)
		}
	}
	changed := wasOpen != b.open
	open := b.open
	b.mu.Unlock()
	if changed && b.onChange != nil {
		b.onChange(open)
	}
}

// abort ends an allowed call without an outcome.
func (b *breaker) abort() {
	b.mu.Lock()
	b.trial = false
	b.mu.Unlock()
}

func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}
