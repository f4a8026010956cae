package resolvers

import (
	"slices"
	"time"

	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	queriesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "resolver_queries_total",
		Help:      "Counter of the queries the resolver map took, by how they were decided: ecs (the client's ECS), population (a resolver's population), address (the resolver's own address).",
	}, []string{"decided"})

	beaconsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "resolver_beacons_total",
		Help:      "Counter of beacon queries (asked, repeated, replayed) and reports (report_joined, report_forged, report_unknown, report_late, report_duplicate, report_capped, report_unplaced, report_invalid).",
	}, []string{"result"})

	ttlKept = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "resolver_ttl_kept_seconds",
		Help:      "Gauge of how long the resolvers of a carrier keep our answers (the median of their re-query intervals' 10th percentiles), against the ttl_seconds answered.",
	}, []string{"isp"})

	failoverWindow = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "resolver_failover_window_seconds",
		Help:      "Gauge of the real failover window of a carrier's clients: the probes' detection time (fall x interval + timeout, the longest of the table's) plus the ttl its resolvers keep.",
	}, []string{"isp"})

	populations = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "resolver_populations",
		Help:      "Gauge of the resolvers (and /24 farms) whose population decides their queries without usable ECS.",
	})
)

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{queriesTotal, beaconsTotal, ttlKept, failoverWindow, populations}

// publishMetrics adds what st counted since pub, the counts last
// published, and sets the gauges from s and the map.
func (m *Map) publishMetrics(s *Snapshot, st, pub *Stats) {
	queriesTotal.WithLabelValues("ecs").Add(float64(st.ECS - pub.ECS))
	queriesTotal.WithLabelValues("population").Add(float64(st.Population - pub.Population))
	queriesTotal.WithLabelValues("address").Add(float64(st.Address - pub.Address))
	pub.ECS, pub.Population, pub.Address = st.ECS, st.Population, st.Address
	if pub.Beacons == nil {
		pub.Beacons = map[string]uint64{}
	}
	for k, v := range st.Beacons {
		beaconsTotal.WithLabelValues(k).Add(float64(v - pub.Beacons[k]))
		pub.Beacons[k] = v
	}
	populations.Set(float64(s.Len()))
	byISP := map[string][]float64{}
	for _, r := range m.res {
		if k := r.kept(); k > 0 && r.exact() {
			byISP[r.self.ISP] = append(byISP[r.self.ISP], k)
		}
	}
	ttlKept.Reset() // carriers whose resolvers went
	failoverWindow.Reset()
	det := time.Duration(m.detection.Load()).Seconds()
	for isp, ks := range byISP {
		slices.Sort(ks)
		ttlKept.WithLabelValues(isp).Set(ks[len(ks)/2])
		failoverWindow.WithLabelValues(isp).Set(det + ks[len(ks)/2])
	}
}
