package health

import (
	"sync"

	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Variables declared for monitoring.
var (
	nodeUp = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "node_up",
		Help:      "Gauge of node health: 1 up or unknown, 0 down.",
	}, []string{"node"})

	nodeLoad = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "node_load",
		Help:      "Gauge of the last load (0..1) a node reported through load_field.",
	}, []string{"node"})

	probeDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace:                   plugin.Namespace,
		Subsystem:                   "gslb",
		Name:                        "probe_duration_seconds",
		Buckets:                     plugin.TimeBuckets,
		NativeHistogramBucketFactor: plugin.NativeHistogramBucketFactor,
		Help:                        "Histogram of the time each health probe took.",
	}, []string{"node", "type"})

	probeFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "probe_failures_total",
		Help:      "Counter of failed health probes by reason.",
	}, []string{"node", "reason"})

	nodeTransitions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "node_transitions_total",
		Help:      "Counter of node state transitions by new state.",
	}, []string{"node", "to"})
)

// On reload the new Checker starts before the old one stops: a node's label
// values are deleted only when no running Checker still probes it.
var (
	refMu   sync.Mutex
	nodeRef = map[string]int{}
)

func acquireNodes(ids []string) {
	refMu.Lock()
	defer refMu.Unlock()
	for _, id := range ids {
		nodeRef[id]++
	}
}

func releaseNodes(ids []string) {
	refMu.Lock()
	defer refMu.Unlock()
	for _, id := range ids {
		nodeRef[id]--
		if nodeRef[id] > 0 {
			continue
		}
		delete(nodeRef, id)
		l := prometheus.Labels{"node": id}
		nodeUp.DeletePartialMatch(l)
		nodeLoad.DeletePartialMatch(l)
		probeDuration.DeletePartialMatch(l)
		probeFailures.DeletePartialMatch(l)
		nodeTransitions.DeletePartialMatch(l)
	}
}

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{nodeUp, nodeLoad, probeDuration, probeFailures, nodeTransitions}
