package health

import (
	"cmp"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/internal/recovery"
)

// Pool runs probes for Checkers. A probe is keyed by node ID and spec and
// runs while some Checker uses it, so that a node table or Corefile reload
// that keeps a node's probe spec keeps its verdict, hold-down and load. A
// node whose spec changed keeps its verdict until its new probe reports.
type Pool struct {
	opts Options
	gate atomic.Pointer[func(id string) bool] // nil: probe every node
	sem  chan struct{}

	mu     sync.Mutex
	probes map[probeKey]*probe
	latest map[string]*probe // per node: the newest probe, whose verdict a new spec inherits
}

// SetGate makes the pool probe node id only while gate(id) says so: a
// fleet member that does not hold a node's probe lease leaves it to the one
// that does. nil probes every node.
func (p *Pool) SetGate(gate func(id string) bool) {
	if gate == nil {
		p.gate.Store(nil)
		return
	}
	p.gate.Store(&gate)
}

// shared is the process's pool: what must survive a Corefile reload.
var shared = NewPool(Options{})

// Shared returns the process's Pool.
func Shared() *Pool { return shared }

// NewPool returns an empty Pool.
func NewPool(opts Options) *Pool {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Pool{opts: opts, sem: make(chan struct{}, opts.Concurrency),
		probes: make(map[probeKey]*probe), latest: make(map[string]*probe)}
}

type probeKey struct {
	id   string
	spec string // the merged spec, canonically encoded
}

func keyOf(t Target) probeKey {
	b, _ := json.Marshal(t.Spec) // maps are sorted, pointers followed
	return probeKey{id: t.ID, spec: string(b)}
}

// probe is one node's probe loop and hysteresis.
type probe struct {
	pool   *Pool
	key    probeKey
	typ    string
	target string // the URL or address probed, for the log
	every  time.Duration
	prober prober
	refs   int // pool.mu
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	st       node
	watchers []*Checker
}

// peek returns the status a Checker for t would start with, and whether it
// is a verdict (a probe result, own or inherited).
func (p *Pool) peek(t Target) (Status, bool) {
	p.mu.Lock()
	pr := p.probes[keyOf(t)]
	if pr == nil {
		pr = p.latest[t.ID]
	}
	p.mu.Unlock()
	if pr == nil {
		return Status{State: StateUnknown, Since: p.opts.Now()}, false
	}
	return pr.status()
}

// acquire returns t's probe, started and watched by c.
func (p *Pool) acquire(t Target, c *Checker) *probe {
	k := keyOf(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.probes[k]
	if pr == nil {
		s := t.Spec
		pr = &probe{pool: p, key: k, typ: s.Type, target: cmp.Or(s.URL, s.Address), every: s.Interval.D(), prober: p.opts.prober(s),
			done: make(chan struct{})}
		pr.st = node{rise: s.Rise, fall: s.Fall, holdDown: s.holdDown()}
		pr.st.st.Since = p.opts.Now()
		if prev := p.latest[t.ID]; prev != nil {
			pr.inherit(prev)
		}
		p.probes[k] = pr
		p.latest[t.ID] = pr
		acquireNodes([]string{t.ID})
		up := 1.0
		if st, _ := pr.status(); st.State == StateDown {
			up = 0
		}
		nodeUp.WithLabelValues(t.ID).Set(up)
		var ctx context.Context
		ctx, pr.cancel = context.WithCancel(context.Background())
		go pr.run(ctx)
	}
	pr.refs++
	pr.mu.Lock()
	pr.watchers = append(pr.watchers, c)
	pr.mu.Unlock()
	return pr
}

// release drops c's use of probes and stops, and waits for, those no
// Checker uses any more.
func (p *Pool) release(probes []*probe, c *Checker) {
	var stopped []*probe
	p.mu.Lock()
	for _, pr := range probes {
		pr.mu.Lock()
		if i := slices.Index(pr.watchers, c); i >= 0 {
			pr.watchers = slices.Delete(pr.watchers, i, i+1)
		}
		pr.mu.Unlock()
		if pr.refs--; pr.refs > 0 {
			continue
		}
		delete(p.probes, pr.key)
		if p.latest[pr.key.id] == pr {
			delete(p.latest, pr.key.id)
		}
		pr.cancel()
		stopped = append(stopped, pr)
	}
	p.mu.Unlock()
	for _, pr := range stopped {
		<-pr.done
		releaseNodes([]string{pr.key.id})
	}
}

// inherit takes prev's verdict, hold-down and load; the new spec's own
// results then move it as usual.
func (pr *probe) inherit(prev *probe) {
	prev.mu.Lock()
	defer prev.mu.Unlock()
	pr.st.st = prev.st.st
	pr.st.seen = prev.st.seen
	pr.st.holdUntil = prev.st.holdUntil
	pr.st.failAt = slices.Clone(prev.st.failAt)
	pr.st.flapAt = slices.Clone(prev.st.flapAt)
}

// status returns the probe's status and whether it has a verdict.
func (pr *probe) status() (Status, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.st.st, pr.st.seen
}

// run probes once per interval, ±10%, until ctx ends.
func (pr *probe) run(ctx context.Context) {
	defer close(pr.done)
	timer := time.NewTimer(rand.N(min(pr.every, maxFirstDelay)) + 1)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		if !recovery.Do("probe", func() { pr.once(ctx) }) && ctx.Err() == nil {
			log.Warningf("node %s: probe skipped after a panic", pr.key.id)
		}
		if ctx.Err() != nil {
			return
		}
		timer.Reset(max(jitter(pr.every)-time.Since(start), 0))
	}
}

// once runs one probe within the pool's concurrency bound and applies it.
func (pr *probe) once(ctx context.Context) {
	if g := pr.pool.gate.Load(); g != nil && !(*g)(pr.key.id) {
		return
	}
	select {
	case pr.pool.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	pstart := time.Now()
	out := pr.prober.probe(ctx)
	took := time.Since(pstart)
	<-pr.pool.sem
	if ctx.Err() != nil {
		return
	}
	id := pr.key.id
	probeDuration.WithLabelValues(id, pr.typ).Observe(took.Seconds())
	if !out.ok {
		probeFailures.WithLabelValues(id, out.reason).Inc()
	}
	pr.apply(out)
}

func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// apply feeds a result to the state machine and tells the watchers when the
// published status changed.
func (pr *probe) apply(out outcome) {
	id := pr.key.id
	pr.mu.Lock()
	n := &pr.st
	prev := n.st.State
	changed, transition := n.observe(out.ok, out.reason, out.load, out.hasLoad, pr.pool.opts.Now())
	to := n.st.State
	switch {
	case to != StateDown:
		n.st.Error = ""
	case transition:
		n.st.Error = out.text()
	}
	var watchers []*Checker
	if changed {
		watchers = slices.Clone(pr.watchers)
	}
	pr.mu.Unlock()

	if out.hasLoad {
		nodeLoad.WithLabelValues(id).Set(out.load)
	}
	if transition {
		nodeTransitions.WithLabelValues(id, to.String()).Inc()
		up := 1.0
		if to == StateDown {
			up = 0
		}
		nodeUp.WithLabelValues(id).Set(up)
		switch {
		case to == StateDown:
			log.Infof("node %s down: %s probe of %s: %s", id, pr.typ, pr.target, out.text())
		case prev == StateUnknown:
			log.Debugf("node %s up", id)
		default:
			log.Infof("node %s up", id)
		}
	} else if !out.ok {
		log.Debugf("node %s: %s probe of %s failed: %s", id, pr.typ, pr.target, out.text())
	}
	for _, c := range watchers {
		c.changed(transition || !out.ok)
	}
}
