package canary

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var rolledBackGauge = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: plugin.Namespace,
	Subsystem: "gslb",
	Name:      "canary_rolled_back",
	Help:      "Gauge that is 1 once the canary rolled back to 0% on its cross-province ratio.",
})

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{rolledBackGauge}
