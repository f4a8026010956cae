package control

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
)

// A view's warm-up is background work beside the queries: on a server
// with one CPU (a CoreDNS pinned to a core, GOMAXPROCS 1) a query waits
// behind it, and the network poller is not read, until it sleeps. So it
// works in slices of paceSlice and then rests, taking at most paceShare
// of a CPU: a query waits for one slice at most, and the warm-up's
// allocations, which set off the collector, are spread out. And warm-ups
// start at most once per warmGap: views that come faster (a reload and
// load reports every second or two) are warmed as the latest at its end,
// not each in turn; a query of a client the warm-up has not reached yet
// prepares its own decision, as without the warm-up.
const (
	paceSlice = 100 * time.Microsecond
	paceShare = 0.25
	// paceDecisions is about how many decisions a slice prepares (each
	// takes 10-20µs with a hundred nodes): the clients handed to one Warm.
	paceDecisions = 4
	warmGap       = 5 * time.Second
)

// pacer spaces the warm-ups of one Control; one goroutine uses it.
type pacer struct {
	last    time.Time     // when the last warm-up was let start
	started atomic.Uint64 // warm-ups let start
}

// spaced waits, when space says so (once the first table is warmed),
// until warmGap has passed since the last warm-up's start, and then takes
// a poke that came meanwhile: the warm-up about to start reads the latest
// views. It returns false when stop closed.
func (p *pacer) spaced(stop <-chan struct{}, signal chan struct{}, space bool) bool {
	if d := warmGap - time.Since(p.last); space && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-stop:
			t.Stop()
			return false
		case <-t.C:
		}
		select {
		case <-signal:
		default:
		}
	}
	p.last = time.Now()
	p.started.Add(1)
	return true
}

// warmSliced is v.Warm of the count clients at(0), at(1), ... with limit,
// stop and current, in slices, resting between them; it returns how many
// decisions the cache holds for the clients it went through.
func warmSliced(v *policy.View, count int, at func(i int) scoring.Client, limit int, stop <-chan struct{}, current func() bool) int {
	per := max(1, paceDecisions/max(1, 2*len(v.Table.Names))) // a record's A and AAAA
	buf := make([]scoring.Client, per)
	gc := newCollector()
	n := 0
	var rest sleeper
	defer rest.done()
	start := time.Now()
	// Warm itself stops at once when stop closed or current says no.
	for i := 0; i < count && n < limit && current(); i += per {
		k := min(per, count-i)
		for j := range k {
			buf[j] = at(i + j)
		}
		n += v.Warm(buf[:k], limit-n, stop, current)
		if worked := time.Since(start); worked >= paceSlice {
			if !rest.sleep(time.Duration(float64(worked)*(1-paceShare)/paceShare), stop) || !gc.wait(stop) {
				return n
			}
			start = time.Now()
		}
	}
	return n
}

// collector tells a warm-up when the collector marks, or is about to: on
// a server with one processor its marking spreads over 20-35 ms at a
// quarter of the CPU, the queries assist it, and a warm-up beside it (and
// its allocations, which the marking must keep up with) made the longest
// stalls of bench/background.sh. The warm-up then rests, at most
// gcRestMax at a time and gcCycleRestMax in a cycle, so that a heap that
// stays near its goal (a memory limit, or an idle server where the
// warm-up alone allocates) slows it only a little.
type collector struct {
	on      bool
	samples [4]metrics.Sample
	state   func() (near bool, cycles uint64) // heapState; a test's
	armed   bool                              // the heap was seen below the threshold in this cycle
	counted bool                              // cycle holds a count
	cycle   uint64                            // the cycle counted last
	rested  time.Duration                     // in that cycle
}

const (
	// gcRunway is the share of the way from the live heap to the goal past
	// which a cycle is about to start or marks: the pacer may start one
	// from 0.7 of the way, and for a server's heap whose marking is short
	// against its allocations near the goal (0.97 in bench/background.sh).
	// From 0.7, a warm-up rested through the 200 ms of a cycle before the
	// marking began, and ran beside it.
	gcRunway       = 0.9
	gcPoll         = 2 * time.Millisecond
	gcRestMax      = 50 * time.Millisecond
	gcCycleRestMax = 200 * time.Millisecond
)

func newCollector() *collector {
	c := &collector{on: runtime.GOMAXPROCS(0) == 1, armed: true}
	c.samples[0].Name = "/memory/classes/heap/objects:bytes"
	c.samples[1].Name = "/gc/heap/live:bytes"
	c.samples[2].Name = "/gc/heap/goal:bytes"
	c.samples[3].Name = "/gc/cycles/total:gc-cycles"
	c.state = c.heapState
	return c
}

// heapState reports whether the heap is past gcRunway of its way to the
// goal, and how many cycles have ended; never near when the runtime lacks
// a metric.
func (c *collector) heapState() (bool, uint64) {
	metrics.Read(c.samples[:])
	for _, s := range c.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return false, 0
		}
	}
	objects, live, goal := c.samples[0].Value.Uint64(), c.samples[1].Value.Uint64(), c.samples[2].Value.Uint64()
	return goal > live && float64(objects) >= float64(live)+gcRunway*float64(goal-live), c.samples[3].Value.Uint64()
}

// wait rests while the collector is near; false when stop closed
// meanwhile. Right after a cycle the heap still counts what it has not
// swept: a rest waits until the heap was seen below the threshold again.
func (c *collector) wait(stop <-chan struct{}) bool {
	if !c.on {
		return true
	}
	var s sleeper
	defer s.done()
	for start := time.Now(); ; {
		near, cycles := c.state()
		switch {
		case !c.counted: // a new warm-up: armed, whatever cycle it starts in
			c.counted, c.cycle = true, cycles
		case cycles != c.cycle:
			c.cycle, c.rested, c.armed = cycles, 0, false
		}
		if !near {
			c.armed = true
			return true
		}
		if !c.armed || c.rested >= gcCycleRestMax || time.Since(start) >= gcRestMax {
			return true
		}
		t := time.Now()
		if !s.sleep(gcPoll, stop) {
			return false
		}
		c.rested += time.Since(t)
	}
}

// sleeper sleeps on one timer, made on first use.
type sleeper struct{ t *time.Timer }

// sleep waits d; false when stop closed first.
func (s *sleeper) sleep(d time.Duration, stop <-chan struct{}) bool {
	if s.t == nil {
		s.t = time.NewTimer(d)
	} else {
		s.t.Reset(d)
	}
	select {
	case <-stop:
		return false
	case <-s.t.C:
		return true
	}
}

func (s *sleeper) done() {
	if s.t != nil {
		s.t.Stop()
	}
}
