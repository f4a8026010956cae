package control

import (
	"sync"

	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/geo"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The control plane's series: what an instance serves from, set when it
// starts serving and as that changes.
var (
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

	nodeDrained = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "node_drained",
		Help:      "Gauge that is 1 while the admin API has the node drained.",
	}, []string{"node"})

	adminStateOK = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "admin_state_ok",
		Help:      "Gauge that is 1 while the admin state file loads, 0 while it does not (gslb serves without it and the admin API refuses changes).",
	}, []string{"file"})

	fileOK = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "file_ok",
		Help:      "Gauge per watched file (node table, overrides, quality, canary table, database, carrier list): 1 while the file on disk is the version serving, 0 after its reload was rejected.",
	}, []string{"file"})
)

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{reloads, qualityRows, dbBuild, nodeDrained, adminStateOK, fileOK, FleetCollector, precomputedDecisions}

// On a Corefile reload the new instance starts before the old one stops:
// a file's series is deleted only when no serving instance watches it.
var (
	fileMu  sync.Mutex
	fileRef = map[string]int{}
)

// acquireFiles exports file_ok for paths, 0 for those in bad.
func acquireFiles(paths []string, bad map[string]bool) {
	fileMu.Lock()
	defer fileMu.Unlock()
	for _, p := range paths {
		fileRef[p]++
		v := 1.0
		if bad[p] {
			v = 0
		}
		fileOK.WithLabelValues(p).Set(v)
	}
}

func releaseFiles(paths []string) {
	fileMu.Lock()
	defer fileMu.Unlock()
	for _, p := range paths {
		if fileRef[p]--; fileRef[p] > 0 {
			continue
		}
		delete(fileRef, p)
		fileOK.DeleteLabelValues(p)
	}
}

func recordDBInfo(db *geo.DB) {
	dbBuild.Reset()
	for _, m := range db.Info() {
		dbBuild.WithLabelValues(m.Kind, m.DatabaseType).Set(float64(m.BuildEpoch))
	}
}
