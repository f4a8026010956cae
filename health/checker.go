// Package health probes the nodes over HTTP and TCP, keeps each node's
// state with rise and fall counts, and hands the control plane immutable
// snapshots of the verdicts.
package health

import (
	"crypto/x509"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/internal/recovery"
)

var log = clog.NewWithPlugin("gslb")

// DefaultConcurrency bounds the probes in flight per Pool.
const DefaultConcurrency = 32

// maxFirstDelay bounds the random offset of a target's first probe, so
// startup is quick but spread.
const maxFirstDelay = 500 * time.Millisecond

// Target is one node to probe. Spec is merged and validated.
type Target struct {
	ID   string
	Spec Spec
}

// Options tune a Pool.
type Options struct {
	RootCAs     *x509.CertPool   // https roots; nil: the system's
	Concurrency int              // probes in flight; 0: DefaultConcurrency
	Now         func() time.Time // clock of the state machine; nil: time.Now
	Source      netip.Addr       // source address of the probes (a multi-homed host); zero: the system's
}

// Checker is one node table's view of its probes: it publishes a Snapshot
// whenever a node's state or load changes. The probes themselves belong to
// the Pool, so a Checker that replaces another shares their verdicts.
type Checker struct {
	pool     *Pool
	targets  []Target
	onChange func(*Snapshot)

	snap  atomic.Pointer[Snapshot]
	ready atomic.Bool

	mu      sync.Mutex // guards probes, unprobed, started, stopped
	probes  []*probe
	started bool
	stopped bool
	// unprobed are the nodes without a probe and their table load: they
	// are up, and their series say so while the Checker runs.
	unprobed map[string]float64

	notify sync.Mutex // one onChange at a time, in snapshot order

	// pending is set while a coalesced refresh waits (changed).
	pending atomic.Bool
}

// coalesce is how long a successful result that changes no node's state
// (its load) waits to be published with the others that come meanwhile: a
// hundred probed nodes reporting their load each second would otherwise
// rebuild the snapshot a hundred times a second, beside the queries. A
// change of state and a failed probe are published at once.
const coalesce = 250 * time.Millisecond

// New returns a Checker on a pool of its own, for targets whose specs may
// still lack their defaults (New merges the built-in ones); it probes
// nothing until Start. Targets with a duplicate ID are ignored. onChange, if
// not nil, is called from a probe's goroutine, one call at a time, with
// each new Snapshot.
func New(targets []Target, opts Options, onChange func(*Snapshot)) *Checker {
	merged := make([]Target, len(targets))
	for i, t := range targets {
		merged[i] = Target{ID: t.ID, Spec: t.Spec.WithDefaults(Spec{})}
	}
	return NewPool(opts).NewChecker(merged, onChange)
}

// NewChecker returns a Checker for targets, whose specs are merged and
// validated, on p. Its first Snapshot holds the verdicts p already has for
// these nodes; it starts nothing.
func (p *Pool) NewChecker(targets []Target, onChange func(*Snapshot)) *Checker {
	c := &Checker{pool: p, onChange: onChange}
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		c.targets = append(c.targets, Target{ID: t.ID, Spec: sane(t.Spec)})
	}
	m := make(map[string]Status, len(c.targets))
	ready := true
	for _, t := range c.targets {
		st, ok := p.peek(t)
		m[t.ID] = st
		ready = ready && ok
	}
	c.snap.Store(&Snapshot{nodes: m})
	c.ready.Store(ready)
	return c
}

// sane keeps a spec that skipped validation from spinning the probe loop
// or naming a type without a prober.
func sane(s Spec) Spec {
	if s.Interval <= 0 || s.Timeout <= 0 {
		s.Interval, s.Timeout = Duration(DefaultInterval), Duration(DefaultTimeout)
	}
	if _, ok := kinds[s.Type]; !ok {
		s.Type = TypeTCP
	}
	return s
}

// Start acquires the targets' probes from the pool, starting those that
// don't run yet. It is idempotent and does nothing after Stop. It does not
// call onChange: the caller publishes what Snapshot returns.
func (c *Checker) Start() {
	c.mu.Lock()
	if c.started || c.stopped {
		c.mu.Unlock()
		return
	}
	c.started = true
	for _, t := range c.targets {
		c.probes = append(c.probes, c.pool.acquire(t, c))
	}
	ids := slices.Collect(maps.Keys(c.unprobed))
	acquireNodes(ids)
	for id, load := range c.unprobed {
		nodeUp.WithLabelValues(id).Set(1)
		nodeLoad.WithLabelValues(id).Set(load)
	}
	c.mu.Unlock()
	c.notify.Lock()
	c.refresh()
	c.notify.Unlock()
}

// Stop releases the probes; the pool stops those no Checker uses and waits
// for them. It is idempotent.
func (c *Checker) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	probes := c.probes
	c.probes = nil
	var ids []string
	if c.started {
		ids = slices.Collect(maps.Keys(c.unprobed))
	}
	c.mu.Unlock()
	c.pool.release(probes, c)
	releaseNodes(ids)
}

// Unprobed names the nodes without a probe, with their table load, for
// node_up (1) and node_load while the Checker runs. Call it before Start.
func (c *Checker) Unprobed(loads map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unprobed = loads
}

// Snapshot returns the latest published Snapshot; never nil.
func (c *Checker) Snapshot() *Snapshot { return c.snap.Load() }

// Ready reports whether every target has its first result.
func (c *Checker) Ready() bool { return c.ready.Load() }

// changed is called by a probe whose status changed; now: its state did,
// or the probe failed.
func (c *Checker) changed(now bool) {
	if !now {
		if c.pending.CompareAndSwap(false, true) {
			time.AfterFunc(coalesce, func() {
				c.pending.Store(false)
				recovery.Do("probe", c.publish)
			})
		}
		return
	}
	c.publish()
}

// publish refreshes the snapshot and hands a new one to onChange.
func (c *Checker) publish() {
	c.notify.Lock()
	defer c.notify.Unlock()
	if s := c.refresh(); s != nil && c.onChange != nil {
		c.onChange(s)
	}
}

// refresh rebuilds the Snapshot from the probes; it returns it when it
// differs from the published one. Callers hold c.notify.
func (c *Checker) refresh() *Snapshot {
	c.mu.Lock()
	probes := c.probes
	c.mu.Unlock()
	if probes == nil {
		return nil
	}
	m := make(map[string]Status, len(probes))
	ready := true
	for _, p := range probes {
		st, seen := p.status()
		m[p.key.id] = st
		ready = ready && seen
	}
	c.ready.Store(ready)
	old := c.snap.Load()
	if old.equal(m) {
		return nil
	}
	s := &Snapshot{nodes: m}
	c.snap.Store(s)
	return s
}
