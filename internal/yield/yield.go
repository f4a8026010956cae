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
	"time"
)

// Pause is how long Now sleeps: longer than the scheduler takes to reach
// the network poll, short beside a query's latency.
const Pause = 20 * time.Microsecond

// Now lets the goroutines waiting for the processor, and the network
// poll, run before the caller goes on.
func Now() { time.Sleep(Pause) }

// Every is how much input a Reader passes between two yields: about half
// a millisecond of YAML parsing.
const Every = 4 << 10

// Reader is r that yields (Now) every Every bytes read: a parser reading
// a large file through it stops that often.
func Reader(r io.Reader) io.Reader { return &reader{r: r} }

type reader struct {
	r     io.Reader
	since int
}

func (y *reader) Read(p []byte) (int, error) {
	if y.since >= Every {
		y.since = 0
		Now()
	}
	n, err := y.r.Read(p[:min(len(p), Every-y.since)])
	y.since += n
	return n, err
}
