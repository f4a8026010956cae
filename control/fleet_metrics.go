package control

import (
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/fleet"

	"github.com/prometheus/client_golang/prometheus"
)

// fleetCollector reads the fleet's series from the members at each scrape:
// a process is normally one member; several add up.
type fleetCollector struct{}

func fleetDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "gslb", name), help, labels, nil)
}

var (
	fleetMembersDesc  = fleetDesc("fleet_members", "Gauge of the fleet's members with a fresh heartbeat, this one included; 1 while the member is isolated.")
	fleetSyncAgeDesc  = fleetDesc("fleet_sync_age_seconds", "Gauge of the seconds since the shared state was last read from Redis.")
	fleetChangesDesc  = fleetDesc("fleet_changes_total", "Counter of shared control changes by origin (local, remote) and result (applied, pending, lost).", "origin", "result")
	fleetIsolatedDesc = fleetDesc("fleet_isolated", "Gauge that is 1 while Redis has been out of reach for longer than a verdict counts: the member answers from its own probes.")
	fleetRepairedDesc = fleetDesc("fleet_repaired_total", "Counter of the fleet's Redis entries repaired by kind (key, heartbeat, report, lease): of the wrong type or not a record, timed ahead of Redis's clock, a lease without a TTL or held by a non-member.", "kind")
	fleetSkippedDesc  = fleetDesc("fleet_state_skipped_total", "Counter of shared state entries that did not read (malformed, too large, a key of the wrong type) or were not shared: logged and skipped.")
	fleetOffsetDesc   = fleetDesc("fleet_clock_offset_seconds", "Gauge of Redis's clock minus this member's, as of the last read of the shared state.")
	fleetSkewDesc     = fleetDesc("fleet_clock_skew_total", "Counter of reads of the shared state that found this member's clock more than 1s off Redis's.")
	fleetNodeDownDesc = fleetDesc("fleet_node_down", "Gauge of the fleet's combined verdict of a node by vantage carrier (and fleet for the vantages' quorum): 1 down, 0 up.", "node", "vantage")
)

// FleetCollector is the fleet's series.
var FleetCollector prometheus.Collector = fleetCollector{}

func init() { prometheus.MustRegister(FleetCollector) }

func (fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fleetMembersDesc, fleetSyncAgeDesc, fleetChangesDesc, fleetIsolatedDesc, fleetRepairedDesc, fleetSkippedDesc, fleetOffsetDesc, fleetSkewDesc, fleetNodeDownDesc} {
		ch <- d
	}
}

func (fleetCollector) Collect(ch chan<- prometheus.Metric) {
	members.Lock()
	ms := make([]*member, 0, len(members.m))
	for _, m := range members.m {
		ms = append(ms, m)
	}
	members.Unlock()
	if len(ms) == 0 {
		return
	}
	var count int
	var age, isolated, offset float64
	var skipped, skews uint64
	changes := map[fleet.ChangeKey]uint64{}
	repaired := map[string]uint64{}
	down := map[[2]string]float64{}
	for _, m := range ms {
		s := m.f.Stats()
		count = max(count, s.Members)
		age = max(age, s.SyncAge.Seconds())
		if s.Isolated {
			isolated = 1
		}
		skipped += s.Skipped
		skews += s.Clock.Skews
		if o := s.Clock.Offset.Seconds(); o*o > offset*offset {
			offset = o // the farthest off
		}
		for k, v := range s.Changes {
			changes[k] += v
		}
		for k, v := range s.Repaired {
			repaired[k] += v
		}
		c := m.ctl.Load()
		if c == nil {
			continue
		}
		v := m.f.Verdicts()
		for _, n := range c.Table().Nodes {
			if d, ok := v.Decide(n.ID, ""); ok {
				down[[2]string{n.ID, fleet.VantageFleet}] = b2f(d.Down)
			}
			for carrier, d := range v.Carriers(n.ID) {
				down[[2]string{n.ID, carrier}] = b2f(d.Down)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(fleetMembersDesc, prometheus.GaugeValue, float64(count))
	ch <- prometheus.MustNewConstMetric(fleetSyncAgeDesc, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(fleetIsolatedDesc, prometheus.GaugeValue, isolated)
	ch <- prometheus.MustNewConstMetric(fleetSkippedDesc, prometheus.CounterValue, float64(skipped))
	ch <- prometheus.MustNewConstMetric(fleetOffsetDesc, prometheus.GaugeValue, offset)
	ch <- prometheus.MustNewConstMetric(fleetSkewDesc, prometheus.CounterValue, float64(skews))
	for _, origin := range []string{fleet.OriginLocal, fleet.OriginRemote} {
		for _, result := range []string{fleet.ResultApplied, fleet.ResultPending, fleet.ResultLost} {
			ch <- prometheus.MustNewConstMetric(fleetChangesDesc, prometheus.CounterValue, float64(changes[fleet.ChangeKey{Origin: origin, Result: result}]), origin, result)
		}
	}
	for _, kind := range []string{fleet.RepairedKey, fleet.RepairedHeartbeat, fleet.RepairedReport, fleet.RepairedLease} {
		ch <- prometheus.MustNewConstMetric(fleetRepairedDesc, prometheus.CounterValue, float64(repaired[kind]), kind)
	}
	for k, v := range down {
		ch <- prometheus.MustNewConstMetric(fleetNodeDownDesc, prometheus.GaugeValue, v, k[0], k[1])
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
