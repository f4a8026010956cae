// Package yield lets queries through background work.
//
// On a server with one CPU (a CoreDNS pinned to a core: GOMAXPROCS 1) a
// goroutine parsing a file or building a view runs until it blocks, and
// meanwhile the network is not read: the queries that arrive wait for
// the whole stretch. runtime.Gosched does not help, since the scheduler
// runs the only runnable goroutine again before it polls the network. A
// short sleep does: the processor then runs what is waiting and polls the
// network before the sleeper's timer is due.
package yield

import (
	"io"
	"runtime"
	"time"
)

const (
	// Slice is the work between two yields: about what a query may wait.
	Slice = 500 * time.Microsecond
	// Pause is a yield's rest: twice a Slice, so that while queries wait
	// the owner takes at most a third of the processor. A shorter sleep
	// let one or two of them through and then the next Slice ran: a node
	// table's parse of 8 ms held the processor 95% of the time while it
	// lasted, and the queries of a busy server fell behind.
	Pause = 2 * Slice
	// maxSlice bounds the back-off of an idle server's yields: what a query
	// arriving on a lightly loaded one may wait.
	maxSlice = 4 * time.Millisecond
)

// A Yielder yields to the queries every Slice of its owner's work, with
// one processor only (with more, the queries run beside it). A rest
// during which the process took next to no CPU says nothing else wanted
// the processor: it then yields less often, down to once per maxSlice,
// so that a large file on an idle server is not parsed at a third of its
// speed. A rest the queries filled resets the slice to Slice. One
// goroutine uses it; a nil Yielder never yields.
type Yielder struct {
	on    bool
	last  time.Time
	slice time.Duration
}

// New starts a Yielder's first slice now.
func New() *Yielder {
	return &Yielder{on: runtime.GOMAXPROCS(0) == 1, last: time.Now(), slice: Slice}
}

// Point yields when the slice since the last yield is over.
func (y *Yielder) Point() {
	if y == nil || !y.on {
		return
	}
	start := time.Now()
	if start.Sub(y.last) < y.slice {
		return
	}
	cpu0, known := cpuTime()
	time.Sleep(Pause)
	y.last = time.Now()
	slept := y.last.Sub(start)
	if cpu1, ok := cpuTime(); known && ok && cpu1-cpu0 < slept/4 {
		y.slice = min(2*y.slice, maxSlice)
	} else {
		y.slice = Slice
	}
}

// Reader is r through y: a parser reading a large input through it yields
// between its reads (yaml's are of 512 bytes).
func (y *Yielder) Reader(r io.Reader) io.Reader { return &reader{r: r, y: y} }

type reader struct {
	r io.Reader
	y *Yielder
}

func (r *reader) Read(p []byte) (int, error) {
	if len(p) > 0 {
		r.y.Point()
	}
	return r.r.Read(p)
}
