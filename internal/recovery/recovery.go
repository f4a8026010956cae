// Package recovery keeps a panic in one of the plugin's background
// goroutines from taking the whole server down: it is logged, counted, and
// the goroutine goes on with its next round.
package recovery

import (
	"runtime/debug"

	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var log = clog.NewWithPlugin("gslb")

// Panics counts recovered panics by the component they happened in.
var Panics = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace,
	Subsystem: "gslb",
	Name:      "panics_total",
	Help:      "Counter of panics recovered in the plugin's background work, by component.",
}, []string{"component"})

// Guard recovers a panic of the goroutine that defers it. It must be
// deferred directly: defer recovery.Guard("probe").
func Guard(component string) {
	if r := recover(); r != nil {
		Panics.WithLabelValues(component).Inc()
		log.Errorf("Recovered from a panic in %s: %v\n%s", component, r, debug.Stack())
	}
}

// Do runs fn and recovers a panic in it; it reports whether fn returned.
func Do(component string, fn func()) (ok bool) {
	defer Guard(component)
	fn()
	return true
}

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{Panics}
