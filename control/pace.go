package control

import (
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
			start = time.Now()
		}
	}
	return n
}
