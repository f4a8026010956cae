package control

import (
	"sync"
	"time"

	"github.com/gslbdns/gslb/health"
)

// loadBatch is the least time between two views that probe results
// without a change of state (a node's load, its count of recent failures)
// publish. Such a result within it of the last such view waits for the
// rest of it, with every other one of that time: a hundred probed nodes
// reporting their load make one view, and one warm-up of its decisions,
// per batch instead of one per result. The first after a quiet spell
// publishes at once, and a node going down or coming back always does:
// failover is not delayed.
const loadBatch = 5 * time.Second

// batcher publishes load reports at most once per loadBatch.
type batcher struct {
	mu      sync.Mutex
	last    time.Time   // the last batched publish
	pending *time.Timer // the publish at the end of the batch; nil: none
}

// report publishes now when urgent or when the last batched publish is a
// batch ago, else once at the end of the batch. publish reads the latest
// verdicts, so a report that finds one pending adds nothing.
func (b *batcher) report(urgent bool, publish func()) {
	b.mu.Lock()
	if urgent {
		b.mu.Unlock()
		publish()
		return
	}
	if b.pending != nil {
		b.mu.Unlock()
		return
	}
	wait := loadBatch - time.Since(b.last)
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

// published says a view was just published for another reason (a
// reload, a change of state): it read the latest verdicts, so a pending
// publish would add nothing, and the batch starts over. Loads that kept
// coming with reloads every couple of seconds otherwise made a view of
// their own between each two, and every view has each client decided
// again.
func (b *batcher) published() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending != nil && b.pending.Stop() {
		b.pending, b.last = nil, time.Now()
	}
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

// transition says whether a probed node's state differs between two
// snapshots of targets.
func transition(targets []health.Target, prev, cur *health.Snapshot) bool {
	for _, t := range targets {
		a, _ := prev.Status(t.ID)
		b, _ := cur.Status(t.ID)
		if a.State != b.State {
			return true
		}
	}
	return false
}
