package canary

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	rolledBackGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "canary_rolled_back",
		Help:      "Gauge that is 1 once the canary rolled back to 0% on its cross-province ratio.",
	})
	stepGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "canary_step_percent",
		Help:      "Gauge of the canary autopilot's step: the percent of the subnets it gives the candidate (0 once rolled back).",
	})
	guardMargin = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "canary_guard_margin",
		Help:      "Gauge of how far inside its bound each canary guard is at the last look, in the guard's unit; below 0 it breached.",
	}, []string{"guard"})
	transitions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "canary_transitions_total",
		Help:      "Counter of the canary autopilot's events by action (start, advance, complete, rollback, pause, resume).",
	}, []string{"action"})
)

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{rolledBackGauge, stepGauge, guardMargin, transitions}

// setMargins shows the guards judged at the last look; one waiting for
// samples has no margin.
func setMargins(rs []GuardResult) {
	for i := range rs {
		if rs[i].Verdict == Waiting {
			guardMargin.DeleteLabelValues(rs[i].Guard)
			continue
		}
		guardMargin.WithLabelValues(rs[i].Guard).Set(rs[i].Margin)
	}
}
