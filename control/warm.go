package control

import (
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// precomputedDecisions is how many decisions were prepared ahead for the
// view served now.
var precomputedDecisions = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: plugin.Namespace,
	Subsystem: "gslb",
	Name:      "precomputed_decisions",
	Help:      "Number of decisions prepared ahead, per record and family, for the locations of the precomputed IPv4 ranges under the current view.",
})

// warmer prepares the decisions of the databases' locations for every
// view the control plane publishes, in the background: a query of a
// client never seen then picks from them instead of preparing one.
type warmer struct {
	signal chan struct{}
	wg     sync.WaitGroup
	// warmed is the last view warmed to the end (or its limit).
	warmed atomic.Pointer[policy.View]
	// ready: a view was warmed after the first table was built.
	ready atomic.Bool
	// order and clients: the last table's order and its clients.
	order   []uint32
	clients []scoring.Client
}

// poke asks the warmer to catch up with the view; it never blocks.
func (w *warmer) poke() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// warm warms each new view until stop closes.
func (c *Control) warm(stop <-chan struct{}) {
	w := &c.warmer
	defer w.wg.Done()
	for {
		select {
		case <-stop:
			return
		case <-w.signal:
		}
		if !c.pace.spaced(stop, w.signal) { // pace.go
			return
		}
		tabled := c.locator.Tabled()
		recovery.Do("precompute", func() {
			v := c.view.Load()
			clients, fresh := w.clientsOf(c.locator.Placed())
			n := c.pace.warm(v, clients, policy.WarmMax, stop, func() bool { return c.view.Load() == v }) // pace.go
			if c.view.Load() == v && len(clients) > 0 {
				precomputedDecisions.Set(float64(n))
				w.warmed.Store(v)
			}
			if fresh {
				debug.FreeOSMemory() // what the table's build and its clients' dedup freed
			}
		})
		if tabled {
			w.ready.Store(true) // warmed, or nothing to warm (no table, carrier lists), or a panic
		}
	}
}

// warmedOnce says whether the first table's view was warmed; true
// without a precomputation.
func (w *warmer) warmedOnce() bool { return w.signal == nil || w.ready.Load() }

// clientsOf is what the ladder sees of locs, in order, each once; fresh
// when they are a new table's.
func (w *warmer) clientsOf(locs []geo.Location, order []uint32) (clients []scoring.Client, fresh bool) {
	if len(order) == 0 {
		return nil, false
	}
	if len(w.order) == len(order) && &w.order[0] == &order[0] {
		return w.clients, false
	}
	seen := make(map[scoring.Client]bool, len(order))
	var out []scoring.Client
	for _, i := range order {
		cl := policy.ClientOf(&locs[i])
		if !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	w.order, w.clients = order, out
	return out, true
}
