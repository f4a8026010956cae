package gslb

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/test"

	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// Each node's answers go to its own series, by index into whichever table
// answered, as tables come and go.
func TestNodeCountersByTable(t *testing.T) {
	m := newServerMetrics("nodecounters.test.")
	tables := [][]table.Node{nodesOf("a", "b"), nodesOf("b", "a"), nodesOf("c", "a", "b"), nodesOf("a", "b")}
	want := map[string]float64{}
	for round := range 3 {
		for _, nodes := range tables {
			for i := range nodes {
				for range i + 1 + round {
					m.nodeAt(nodes, i).Inc()
					want[nodes[i].ID]++
				}
			}
		}
	}
	for id, n := range want {
		if got := testutil.ToFloat64(nodeAnswers.WithLabelValues(m.server, id)); got != n {
			t.Errorf("node_answers_total{node=%q} = %v, want %v", id, got, n)
		}
	}
	if l := m.tables.Load(); l == nil || len(*l) != 2 {
		t.Errorf("%v tables kept, want 2", l)
	}
}

func nodesOf(ids ...string) []table.Node {
	nodes := make([]table.Node, len(ids))
	for i, id := range ids {
		nodes[i].ID = id
	}
	return nodes
}

// The decision duration histogram has one sample per decided query.
func TestDecisionDurationCount(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "")
	h := decisionDuration.WithLabelValues("").(prometheus.Metric)
	before := histogramCount(t, h)
	const n = 7
	for range n {
		w := &test.ResponseWriter{}
		if rc, err := g.ServeDNS(context.Background(), w, query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))); rc != dns.RcodeSuccess || err != nil {
			t.Fatalf("rcode %d, err %v", rc, err)
		}
	}
	if got := histogramCount(t, h) - before; got != n {
		t.Errorf("decision_duration_seconds_count grew by %d, want %d", got, n)
	}
}

func histogramCount(t *testing.T, m prometheus.Metric) uint64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetHistogram().GetSampleCount()
}
