package control

import (
	"sync"
	"time"
)

// probeBatch is the least time between two views that probe results
// publish. A result within it of the last such view waits for the rest of
// it, with every other result of that time: a hundred probed nodes make at
// most one view, and one warm-up of its decisions, per batch instead of one
// per result. The first result after a quiet spell publishes at once.
const probeBatch = time.Second

// batcher publishes probe results at most once per probeBatch.
type batcher struct {
	mu      sync.Mutex
	last    time.Time   // the last publish it made
	pending *time.Timer // the publish at the end of the batch; nil: none
}

// report publishes now, or once at the end of the running batch; publish
// reads the latest verdicts, so a report that finds one pending adds
// nothing.
func (b *batcher) report(publish func()) {
	b.mu.Lock()
	if b.pending != nil {
		b.mu.Unlock()
		return
	}
	wait := probeBatch - time.Since(b.last)
	if wait <= 0 {
		b.last = time.Now()
		b.mu.Unlock()
		publish()
		return
	}
	b.pending = time.AfterFunc(wait, func() {
		b.mu.Lock()
		b.pending, b.last = nil, time.Now()
		b.mu.Unlock()
		publish()
	})
	b.mu.Unlock()
}

// stop cancels a pending publish.
func (b *batcher) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending != nil {
		b.pending.Stop()
		b.pending = nil
	}
}
