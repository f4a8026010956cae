package health

import (
	"context"
	"crypto/x509"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

var log = clog.NewWithPlugin("gslb")

// DefaultConcurrency bounds the probes in flight per Checker.
const DefaultConcurrency = 32

// maxFirstDelay bounds the random offset of a target's first probe, so
// startup is quick but spread.
const maxFirstDelay = 500 * time.Millisecond

// Target is one node to probe. Spec is merged and validated.
type Target struct {
	ID   string
	Spec Spec
}

// Options tune a Checker.
type Options struct {
	RootCAs     *x509.CertPool   // https roots; nil: the system's
	Concurrency int              // probes in flight; 0: DefaultConcurrency
	Now         func() time.Time // clock of the state machine; nil: time.Now
}

// Checker probes its targets in the background and publishes a Snapshot
// whenever a node's state or load changes.
type Checker struct {
	targets  []target
	nodes    []node
	ids      []string
	opts     Options
	onChange func(*Snapshot)

	snap    atomic.Pointer[Snapshot]
	ready   atomic.Bool
	pending int // targets without a first result; aggregator only

	results chan result
	sem     chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	started bool
	stopped bool
}

type target struct {
	id     string
	typ    string
	every  time.Duration
	prober *prober
}

type result struct {
	idx int
	outcome
}

// New returns a Checker for targets; it probes nothing until Start. Targets
// with a duplicate ID are ignored. onChange, if not nil, is called from the
// Checker's goroutine, one call at a time, with each new Snapshot.
func New(targets []Target, opts Options, onChange func(*Snapshot)) *Checker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Checker{opts: opts, onChange: onChange}
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		s := t.Spec.WithDefaults(Spec{})
		if s.Interval <= 0 || s.Timeout <= 0 { // not validated: keep the loop sane
			s.Interval, s.Timeout = Duration(DefaultInterval), Duration(DefaultTimeout)
		}
		c.ids = append(c.ids, t.ID)
		c.targets = append(c.targets, target{id: t.ID, typ: s.Type, every: s.Interval.D(), prober: newProber(s, opts.RootCAs)})
		c.nodes = append(c.nodes, node{rise: s.Rise, fall: s.Fall, holdDown: s.holdDown()})
	}
	now := opts.Now()
	for i := range c.nodes {
		c.nodes[i].st.Since = now
	}
	c.pending = len(c.targets)
	c.ready.Store(c.pending == 0)
	c.results = make(chan result, len(c.targets))
	c.sem = make(chan struct{}, opts.Concurrency)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.snap.Store(c.build())
	return c
}

// Start begins probing. It is idempotent and does nothing after Stop.
func (c *Checker) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	acquireNodes(c.ids)
	for _, id := range c.ids {
		nodeUp.WithLabelValues(id).Set(1)
	}
	c.wg.Add(len(c.targets) + 1)
	go c.aggregate()
	for i := range c.targets {
		go c.run(i)
	}
}

// Stop ends probing and waits for every goroutine. It is idempotent.
func (c *Checker) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	c.cancel()
	c.wg.Wait()
	if c.started {
		releaseNodes(c.ids)
	}
}

// Snapshot returns the latest published Snapshot; never nil.
func (c *Checker) Snapshot() *Snapshot { return c.snap.Load() }

// Ready reports whether every target has its first result.
func (c *Checker) Ready() bool { return c.ready.Load() }

// run probes target i once per interval, ±10%.
func (c *Checker) run(i int) {
	defer c.wg.Done()
	t := &c.targets[i]
	timer := time.NewTimer(rand.N(min(t.every, maxFirstDelay)) + 1)
	defer timer.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			return
		}
		pstart := time.Now()
		out := t.prober.probe(c.ctx)
		took := time.Since(pstart)
		<-c.sem
		if c.ctx.Err() != nil {
			return
		}
		probeDuration.WithLabelValues(t.id, t.typ).Observe(took.Seconds())
		if !out.ok {
			probeFailures.WithLabelValues(t.id, out.reason).Inc()
		}
		select {
		case c.results <- result{idx: i, outcome: out}:
		case <-c.ctx.Done():
			return
		}
		timer.Reset(max(jitter(t.every)-time.Since(start), 0))
	}
}

func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// aggregate applies results to the state machines, one at a time, and
// publishes a Snapshot when something changed.
func (c *Checker) aggregate() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case r := <-c.results:
			c.apply(r)
		}
	}
}

func (c *Checker) apply(r result) {
	n := &c.nodes[r.idx]
	id := c.targets[r.idx].id
	first := !n.seen
	prev := n.st.State
	changed, transition := n.observe(r.ok, r.reason, r.load, r.hasLoad, c.opts.Now())
	if r.hasLoad {
		nodeLoad.WithLabelValues(id).Set(r.load)
	}
	if transition {
		to := n.st.State
		nodeTransitions.WithLabelValues(id, to.String()).Inc()
		up := 1.0
		if to == StateDown {
			up = 0
		}
		nodeUp.WithLabelValues(id).Set(up)
		switch {
		case to == StateDown:
			log.Infof("node %s down: %s", id, r.reason)
		case prev == StateUnknown:
			log.Debugf("node %s up", id)
		default:
			log.Infof("node %s up", id)
		}
	} else if !r.ok {
		log.Debugf("node %s probe failed: %s", id, r.reason)
	}
	var s *Snapshot
	if changed {
		s = c.build()
		c.snap.Store(s)
	}
	if first {
		c.pending--
		if c.pending == 0 {
			c.ready.Store(true)
		}
	}
	if s != nil && c.onChange != nil {
		c.onChange(s)
	}
}

func (c *Checker) build() *Snapshot {
	m := make(map[string]Status, len(c.nodes))
	for i := range c.nodes {
		m[c.targets[i].id] = c.nodes[i].st
	}
	return &Snapshot{nodes: m}
}
