package gslb

import (
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/table"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	decisions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "decisions_total",
		Help:      "Counter of A/AAAA answers by the ladder tier that chose the node.",
	}, []string{"server", "tier"})

	nodeAnswers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "node_answers_total",
		Help:      "Counter of A/AAAA answers per node.",
	}, []string{"server", "node"})

	provinceMatch = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "province_match_total",
		Help:      "Counter of answers to clients with a known province, by whether the node is in the same province (same) or not (cross).",
	}, []string{"server", "result"})

	ecsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "ecs_total",
		Help:      "Counter of queries by ECS handling: used, ignored (too coarse or prefix 0), absent, invalid (FORMERR).",
	}, []string{"server", "result"})

	decisionDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "decision_duration_seconds",
		Buckets:   plugin.TimeBuckets,
		Help:      "Histogram of the time to locate the client and choose a node.",
	}, []string{"server"})

	reloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "reloads_total",
		Help:      "Counter of node table and geo database reloads by result (ok, error).",
	}, []string{"result"})

	qualityRows = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "quality_rows",
		Help:      "Gauge of the quality matrix's rows by state: fresh (used) or stale (older than quality_max_age).",
	}, []string{"state"})

	dbBuild = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "geo_database_build_timestamp_seconds",
		Help:      "Build time of the loaded geo databases, from their metadata.",
	}, []string{"db", "type"})
)

func recordDBInfo(db *geo.DB) {
	dbBuild.Reset()
	for _, m := range db.Info() {
		dbBuild.WithLabelValues(m.Kind, m.DatabaseType).Set(float64(m.BuildEpoch))
	}
}

// forgetNodes drops the series of nodes that a reload removed.
func forgetNodes(old, cur *table.Table) {
	keep := make(map[string]bool, len(cur.Nodes))
	for _, n := range cur.Nodes {
		keep[n.ID] = true
	}
	for _, n := range old.Nodes {
		if !keep[n.ID] {
			nodeAnswers.DeletePartialMatch(prometheus.Labels{"node": n.ID})
		}
	}
}
