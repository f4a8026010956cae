package feed

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	rowsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "feed_rows_total",
		Help:      "Counter of feed rows by source and result: accepted, replayed, unplaced, invalid, foreign, rate_limited, too_many_rows, too_large (a body, counted once).",
	}, []string{"source", "result"})

	requestsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "feed_requests_total",
		Help:      "Counter of POST /v1/feed requests by source (\"\" without a valid token) and HTTP status code.",
	}, []string{"source", "code"})

	cellsGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "feed_cells",
		Help:      "Gauge of the feed's cells by state: fresh (counted), thin (too few samples) or stale (no rows for longer than max_age).",
	}, []string{"state"})

	ttfbGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "feed_ttfb_seconds",
		Help:      "Gauge of the TTFB the clients of a province and carrier had from the nodes they were sent to, by quantile (0.5, 0.95), from the fresh feed cells.",
	}, []string{"province", "isp", "quantile"})

	foldSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "feed_fold_duration_seconds",
		Buckets:   plugin.TimeBuckets,
		Help:      "Histogram of the time one fold of the feed's rows into cells takes.",
	})
)

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{rowsTotal, requestsTotal, cellsGauge, ttfbGauge, foldSeconds}
