package gslb

import (
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/rcode"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/sign"
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

	policyDecisions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "policy_decisions_total",
		Help:      "Counter of A/AAAA decisions by policy (stable or canary) and tier.",
	}, []string{"policy", "tier"})

	dnssecDenials = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "dnssec_denials_total",
		Help:      "Counter of signed negative answers by proof (nsec, nsec3, black_lie) and result (nxdomain, nodata).",
	}, []string{"server", "proof", "result"})

	responses = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "responses_total",
		Help:      "Counter of the replies of gslb's zones, by zone and rcode: those gslb writes, and the error rcodes it returns for the server to write.",
	}, []string{"server", "zone", "rcode"})

	rrlLimited = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "rrl_limited_total",
		Help:      "Counter of responses over the response rate limit, by kind (answer, denial, error) and action (drop, slip, log_only).",
	}, []string{"server", "kind", "action"})

	policyProvinceMatch = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "policy_province_match_total",
		Help:      "Counter of answers to clients with a known province by policy and result: same or cross province.",
	}, []string{"policy", "result"})
)

// policyMetrics are the policy counters' children, resolved once: index 0
// is stable, 1 canary.
var policyMetrics = func() (m [2]struct {
	tiers       [scoring.TierOverride + 1]prometheus.Counter
	same, cross prometheus.Counter
}) {
	for i, p := range []string{canary.PolicyStable, canary.PolicyCanary} {
		for t := range m[i].tiers {
			m[i].tiers[t] = policyDecisions.WithLabelValues(p, scoring.Tier(t).String())
		}
		m[i].same = policyProvinceMatch.WithLabelValues(p, "same")
		m[i].cross = policyProvinceMatch.WithLabelValues(p, "cross")
	}
	return m
}()

// forgetNodes drops the series of nodes that a reload removed, and reports
// whether it did.
func forgetNodes(old, cur *table.Table) bool {
	keep := make(map[string]bool, len(cur.Nodes))
	for _, n := range cur.Nodes {
		keep[n.ID] = true
	}
	dropped := false
	for _, n := range old.Nodes {
		if !keep[n.ID] {
			nodeAnswers.DeletePartialMatch(prometheus.Labels{"node": n.ID})
			dropped = true
		}
	}
	return dropped
}

// serverMetrics are one server's metric children, resolved once: resolving
// them per query would hash the label values every time.
type serverMetrics struct {
	tiers       [scoring.TierOverride + 1]prometheus.Counter
	used        prometheus.Counter
	ignored     prometheus.Counter
	absent      prometheus.Counter
	invalid     prometheus.Counter
	same, cross prometheus.Counter
	duration    prometheus.Observer
	server      string
	nodes       atomic.Pointer[map[string]prometheus.Counter]
	// tables are the counters of the last two node tables answered from
	// (the stable's and a canary's), newest first.
	tables atomic.Pointer[[]*nodeCounters]
	// replies are the rcode counters of each zone, each resolved on its
	// first reply.
	replies atomic.Pointer[map[string]*rcodeCounters]
}

type rcodeCounters [16]atomic.Pointer[prometheus.Counter]

// reply counts a reply of zone with rcode.
func (m *serverMetrics) reply(zone string, rc int) {
	cs := loadOrAdd(&m.replies, zone, func() *rcodeCounters { return new(rcodeCounters) })
	if rc < 0 || rc >= len(cs) {
		responses.WithLabelValues(m.server, zone, rcode.ToString(rc)).Inc()
		return
	}
	c := cs[rc].Load()
	if c == nil {
		n := responses.WithLabelValues(m.server, zone, rcode.ToString(rc))
		cs[rc].Store(&n)
		c = &n
	}
	(*c).Inc()
}

// nodeCounters are the answers counters of one table's nodes by index,
// each resolved on the node's first answer: a series appears only for a
// node that answered, as before.
type nodeCounters struct {
	first *table.Node // the table's first node: which table
	c     []atomic.Pointer[prometheus.Counter]
}

func newServerMetrics(server string) *serverMetrics {
	m := &serverMetrics{server: server,
		used:     ecsTotal.WithLabelValues(server, "used"),
		ignored:  ecsTotal.WithLabelValues(server, "ignored"),
		absent:   ecsTotal.WithLabelValues(server, "absent"),
		invalid:  ecsTotal.WithLabelValues(server, "invalid"),
		same:     provinceMatch.WithLabelValues(server, "same"),
		cross:    provinceMatch.WithLabelValues(server, "cross"),
		duration: decisionDuration.WithLabelValues(server),
	}
	for t := range m.tiers {
		m.tiers[t] = decisions.WithLabelValues(server, scoring.Tier(t).String())
	}
	return m
}

// epoch is what queries are timed from: time.Since of a time with a
// monotonic reading reads one clock, time.Now reads two.
var epoch = time.Now()

// sinceEpoch is the monotonic time since epoch.
func sinceEpoch() time.Duration { return time.Since(epoch) }

// count counts one decided query: its ECS handling, the tier, the node,
// the province match, the policy's series and, while a canary is
// configured, the canary's sample for the rollback. now is sinceEpoch's.
func (m *serverMetrics) count(out *decide.Outcome, now time.Duration) {
	switch {
	case out.FromECS:
		m.used.Inc()
	case out.ECS != nil:
		m.ignored.Inc()
	default:
		m.absent.Inc()
	}
	d := &out.Decision
	if d.Winner == nil {
		return
	}
	m.tiers[d.Tier].Inc()
	if out.Servfail {
		return
	}
	if d.Tier != scoring.TierFallback { // no node answered
		m.nodeAt(out.View.Table.Nodes, d.Node).Inc()
	}
	if out.Located {
		if out.Same {
			m.same.Inc()
		} else {
			m.cross.Inc()
		}
	}
	// Without a canary every decision is stable's: the dashboard's stable
	// series then reads the whole traffic, not 0.
	pm := &policyMetrics[0]
	if out.InCanary {
		pm = &policyMetrics[1]
	}
	pm.tiers[d.Tier].Inc()
	if out.Located {
		if out.Same {
			pm.same.Inc()
		} else {
			pm.cross.Inc()
		}
	}
	if out.Canary == nil {
		return
	}
	out.Canary.Count(out.InCanary, out.Located, out.Same, out.Loc.Key, epoch.Add(now))
}

// nodeAt is the answers counter of nodes[i]: a slice index, not a map
// lookup of its id.
func (m *serverMetrics) nodeAt(nodes []table.Node, i int) prometheus.Counter {
	first := &nodes[0]
	var nc *nodeCounters
	if l := m.tables.Load(); l != nil {
		for _, t := range *l {
			if t.first == first && len(t.c) == len(nodes) {
				nc = t
				break
			}
		}
	}
	if nc == nil {
		nc = &nodeCounters{first: first, c: make([]atomic.Pointer[prometheus.Counter], len(nodes))}
		for {
			cur := m.tables.Load()
			next := []*nodeCounters{nc}
			if cur != nil && len(*cur) > 0 {
				next = append(next, (*cur)[0])
			}
			if m.tables.CompareAndSwap(cur, &next) {
				break
			}
		}
	}
	if c := nc.c[i].Load(); c != nil {
		return *c
	}
	c := m.node(nodes[i].ID)
	nc.c[i].Store(&c)
	return c
}

// node is the answers counter of node id.
func (m *serverMetrics) node(id string) prometheus.Counter {
	return loadOrAdd(&m.nodes, id, func() prometheus.Counter { return nodeAnswers.WithLabelValues(m.server, id) })
}

// loadOrAdd is m's value of k, added with create when it has none. Reads
// take no lock: a writer swaps in a copy of the map with k added.
func loadOrAdd[V any](m *atomic.Pointer[map[string]V], k string, create func() V) V {
	if cur := m.Load(); cur != nil {
		if v, ok := (*cur)[k]; ok {
			return v
		}
	}
	v := create()
	for {
		cur := m.Load()
		next := map[string]V{k: v}
		if cur != nil {
			for ck, cv := range *cur {
				next[ck] = cv
			}
		}
		if m.CompareAndSwap(cur, &next) {
			return v
		}
	}
}

// metricsCache holds the serverMetrics of a plugin instance's servers. It
// is reset when a reload drops nodes, whose series are then deleted.
type metricsCache struct {
	m atomic.Pointer[map[string]*serverMetrics]
}

func (mc *metricsCache) of(server string) *serverMetrics {
	return loadOrAdd(&mc.m, server, func() *serverMetrics { return newServerMetrics(server) })
}

func (mc *metricsCache) reset() { mc.m.Store(nil) }

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{decisions, nodeAnswers, provinceMatch, ecsTotal, decisionDuration,
	policyDecisions, policyProvinceMatch, dnssecDenials, rrlLimited, responses}

// denied counts a signed negative answer: a denial of a name that exists
// (NODATA) or not (NXDOMAIN, which black lies answer as a NODATA).
func (m *serverMetrics) denied(d sign.Denial, exists bool) {
	result := "nxdomain"
	if exists {
		result = "nodata"
	}
	dnssecDenials.WithLabelValues(m.server, d.Proof(), result).Inc()
}

// rrlLogEvery bounds the log lines of the response rate limit.
const rrlLogEvery = time.Minute
