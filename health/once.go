package health

import (
	"context"
	"sync"
	"time"

	"github.com/gslbdns/gslb/internal/recovery"
)

// ProbeOnce probes every target once, within the pool's concurrency bound,
// and returns the verdicts a first result sets: up with the reported load,
// or down with the reason. Tools use it; it starts nothing that outlives it.
func ProbeOnce(ctx context.Context, targets []Target, opts Options) *Snapshot {
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	m := make(map[string]Status, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for _, t := range targets {
		spec := sane(t.Spec)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out := outcome{reason: ReasonConnect} // what a panicking prober leaves
			recovery.Do("probe", func() { out = opts.prober(spec).probe(ctx) })
			st := Status{State: StateUp, Load: out.load, HasLoad: out.hasLoad, From: StateUnknown, Since: now()}
			if !out.ok {
				st = Status{State: StateDown, Reason: out.reason, Error: out.text(), From: StateUnknown, Since: now()}
			}
			mu.Lock()
			m[t.ID] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	return NewSnapshot(m)
}
