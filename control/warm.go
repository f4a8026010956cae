package control

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// precomputedDecisions is how many decisions the cache holds ready for
// the view served now, and canaryDecisions for the canary's.
var (
	precomputedDecisions = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "precomputed_decisions",
		Help:      "Number of decisions, per record and family, the decision cache holds ready for the view served now once its warm-up ended.",
	})
	canaryDecisions = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "canary_precomputed_decisions",
		Help:      "Number of decisions, per record and family, the canary's decision cache holds ready for its view once its warm-up ended; 0 without a canary.",
	})
	// warmedViews counts the views whose warm-up ended while served.
	warmedViews = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "warmed_views_total",
		Help:      "Counter of views, by policy (stable or canary), whose warm-up ended while they were served: their decisions are prepared, within the precompute bounds.",
	}, []string{"policy"})
)

// warmer prepares the decisions of the databases' locations for every
// view the control plane publishes, the stable table's and the canary's,
// in the background: a query of a client never seen then picks from them
// instead of preparing one.
type warmer struct {
	signal chan struct{}
	wg     sync.WaitGroup
	// warmed is the last view warmed to the end (or its limit), and
	// canary the canary's.
	warmed atomic.Pointer[policy.View]
	canary atomic.Pointer[policy.View]
	// ready: a view was warmed after the first table was built.
	ready atomic.Bool
	// places are the last table's clients.
	places *locate.Places
	// full and canaryFull say when the stable view's warm-up and the
	// canary's (of canaryOf) prepare all the clients.
	full, canaryFull fullWarm
	canaryOf         *canary.Rollout
}

// fullWarmEvery spaces the warm-ups that prepare all of the databases'
// clients (within the bounds) when nothing they place changed: those in
// between prepare the clients the queries asked for. Loads and reloads
// bring a view every few seconds, and each would otherwise prepare
// thousands of decisions for clients nobody asks, a few percent of a CPU
// that shows in the queries' tail; a client no warm-up reached prepares
// its own decision on its first query, once per view.
const fullWarmEvery = time.Minute

// fullWarm says when a warm-up prepares all the clients.
type fullWarm struct {
	last time.Time // when one last started
	// owed: the clients are new (or the canary), and no warm-up of all
	// of them has ended since; a newer view cuts one short.
	owed bool
}

// due reports whether a warm-up starting now prepares all the clients:
// one owed, or a minute after the last.
func (f *fullWarm) due(now time.Time) bool {
	if !f.owed && now.Sub(f.last) < fullWarmEvery {
		return false
	}
	f.last = now
	return true
}

// run warms with warm, of all the clients when due (owe: they are new,
// and one is owed until such a warm-up ends while its view is served).
func (f *fullWarm) run(owe bool, now time.Time, warm func(full bool) bool) {
	f.owed = f.owed || owe
	if full := f.due(now); warm(full) && full {
		f.owed = false
	}
}

// poke asks the warmer to catch up with the views; it never blocks.
func (w *warmer) poke() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// warm warms each new view until stop closes. The views are served while
// they warm: the warm-up holds nothing a query waits on.
func (c *Control) warm(stop <-chan struct{}) {
	w := &c.warmer
	defer w.wg.Done()
	for {
		select {
		case <-stop:
			return
		case <-w.signal:
		}
		if !c.pace.spaced(stop, w.signal, w.ready.Load()) { // pace.go
			return
		}
		tabled := c.locator.Tabled()
		recovery.Do("precompute", func() {
			clients := c.locator.Placed()
			fresh := clients.Len() > 0 && clients != w.places
			if fresh {
				w.places = clients
			}
			now := time.Now()
			if v := c.view.Load(); fresh || w.warmed.Load() != v {
				w.full.run(fresh, now, func(full bool) bool {
					return warmOne(v, &w.warmed, clients, full, c.decisions, precomputedDecisions, warmedViews.WithLabelValues(canary.PolicyStable), stop, func() bool { return c.view.Load() == v })
				})
			}
			cn := c.canary.Load()
			if cn == nil {
				canaryDecisions.Set(0)
			} else if cv := cn.View.Load(); cv != nil && (fresh || w.canary.Load() != cv) {
				owe := fresh || w.canaryOf != cn
				w.canaryOf = cn
				w.canaryFull.run(owe, now, func(full bool) bool {
					return warmOne(cv, &w.canary, clients, full, cn.Cache, canaryDecisions, warmedViews.WithLabelValues(canary.PolicyCanary), stop, func() bool { return cn.View.Load() == cv && c.canary.Load() == cn })
				})
			}
			if fresh {
				debug.FreeOSMemory() // what the table's build and Placed freed
			}
		})
		if tabled {
			w.ready.Store(true) // warmed, or nothing to warm (no table, carrier lists), or a panic
		}
	}
}

// warmOne warms v, served while current says so, into cache for at most
// policy.WarmTime, all of clients when full; once warmed while still
// served, v is last, gauge counts what cache holds of it, warmed counts
// it, and warmOne reports true.
func warmOne(v *policy.View, last *atomic.Pointer[policy.View], clients *locate.Places, full bool, cache *policy.Cache, gauge prometheus.Gauge, warmed prometheus.Counter, stop <-chan struct{}, current func() bool) bool {
	until := time.Now().Add(policy.WarmTime)
	warmView(v, last.Load(), clients, full, cache, stop, func() bool { return current() && time.Now().Before(until) })
	if current() && clients.Len() > 0 {
		// The next warm-up reads v's clients: the views' before it can
		// go. Not sooner: a warm-up a newer view cut short leaves last,
		// and its clients, as they were.
		v.Sweep()
		gauge.Set(float64(v.Held()))
		last.Store(v)
		warmed.Inc()
		return true
	}
	return false
}

// warmView warms v, whose decisions live in cache: first the clients
// queries asked for since prev (the view last warmed), then, when full,
// the table's clients, the most addresses first, within policy.WarmBytes
// and while current says so. The cache is sized for them all.
func warmView(v, prev *policy.View, clients *locate.Places, full bool, cache *policy.Cache, stop <-chan struct{}, current func() bool) {
	if clients.Len() == 0 || cache == nil {
		return
	}
	recent := prev.Recent()
	limit := cache.Reserve((len(recent)+clients.Len())*v.PerClient(), policy.WarmBytes, v.DecisionBytes())
	n := warmSliced(v, len(recent), func(i int) scoring.Client { return recent[i] }, limit, stop, current) // pace.go
	if full {
		warmSliced(v, clients.Len(), func(i int) scoring.Client { loc := clients.At(i); return policy.ClientOf(&loc) }, limit-n, stop, current)
	}
}

// warmedOnce says whether the first table's view was warmed; true
// without a precomputation.
func (w *warmer) warmedOnce() bool { return w.signal == nil || w.ready.Load() }
