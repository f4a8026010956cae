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
	var rest *time.Timer
	start := time.Now()
	// Warm itself stops at once when stop closed or current says no.
	for i := 0; i < count && n < limit && current(); i += per {
		k := min(per, count-i)
		for j := range k {
			buf[j] = at(i + j)
		}
		n += v.Warm(buf[:k], limit-n, stop, current)
		if worked := time.Since(start); worked >= paceSlice {
			d := time.Duration(float64(worked) * (1 - paceShare) / paceShare)
			if rest == nil {
				rest = time.NewTimer(d)
				defer rest.Stop()
			} else {
				rest.Reset(d)
			}
			select {
			case <-stop:
				return n
			case <-rest.C:
			}
			if !gc.wait(stop) {
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
// stalls of bench/background.sh. The warm-up then rests until the cycle
// is over, at most gcRestMax at a time.
type collector struct {
	on      bool
	samples [3]metrics.Sample
	near    func() bool // the heap in the last stretch before its goal; a test's
}

const (
	// gcRunway is the share of the way from the live heap to the goal past
	// which a cycle may have started (the pacer starts one at 0.7 to 0.95).
	gcRunway = 0.7
	gcPoll   = 2 * time.Millisecond
	// gcRestMax bounds a rest, so that a heap that stays near its goal (a
	// memory limit) slows a warm-up but does not stop it.
	gcRestMax = 50 * time.Millisecond
)

func newCollector() *collector {
	c := &collector{on: runtime.GOMAXPROCS(0) == 1}
	c.samples[0].Name = "/memory/classes/heap/objects:bytes"
	c.samples[1].Name = "/gc/heap/live:bytes"
	c.samples[2].Name = "/gc/heap/goal:bytes"
	c.near = c.heapNear
	return c
}

func (c *collector) heapNear() bool {
	metrics.Read(c.samples[:])
	for _, s := range c.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return false // not in this runtime: never rest
		}
	}
	objects, live, goal := c.samples[0].Value.Uint64(), c.samples[1].Value.Uint64(), c.samples[2].Value.Uint64()
	return goal > live && float64(objects) >= float64(live)+gcRunway*float64(goal-live)
}

// wait rests while the collector is near, at most gcRestMax; false when
// stop closed meanwhile.
func (c *collector) wait(stop <-chan struct{}) bool {
	if !c.on {
		return true
	}
	var t *time.Timer
	for end := time.Now().Add(gcRestMax); c.near() && time.Now().Before(end); {
		if t == nil {
			t = time.NewTimer(gcPoll)
			defer t.Stop()
		} else {
			t.Reset(gcPoll)
		}
		select {
		case <-stop:
			return false
		case <-t.C:
		}
	}
	return true
}
