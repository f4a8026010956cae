package fleet_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gslbdns/gslb/fleet"

	"github.com/redis/go-redis/v9"
)

// How a control plane uses a fleet: its admin changes go through Set, the
// fleet's state comes back through OnState, its probes are gated by
// Probing and reported by Report, and the query path reads Verdicts.
func Example() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer client.Close()
	f, err := fleet.Start(fleet.Config{
		Name: "cdn-prod", Member: "ns1", Vantage: fleet.Vantage{Carrier: "telecom", Province: "ZJ"},
		Client: client, Quorum: 0.5, Probers: 2,
		OnState:    func(s *fleet.State) { /* rebuild drains and pins from s.Keys("drain/"), s.Keys("pin/") */ },
		OnConflict: func(c fleet.Conflict) { /* count, log */ },
		OnRollback: func(r fleet.Rollback) { /* roll the canary back */ },
	})
	if err != nil {
		return
	}
	defer f.Close()

	// POST /v1/nodes/n1/drain
	f.Set(fleet.Change{Key: "drain/n1", Value: json.RawMessage(`{"since":"2026-12-01T00:00:00Z"}`)})

	// Probes: only the nodes this member holds a lease of.
	f.SetNodes([]string{"n1", "n2"})
	own := map[string]fleet.NodeVerdict{}
	for _, id := range []string{"n1", "n2"} {
		if f.Probing(id) {
			own[id] = fleet.NodeVerdict{Down: false, Load: 0.3}
		}
	}
	f.Report(own)

	// The query path, for a unicom client: no I/O, no lock.
	if d, ok := f.Verdicts().Decide("n1", "unicom"); ok && d.Down {
		_ = d.Vantage // for explain and gslb/node_state
	}

	// The canary: count per window, decide the rollback once.
	f.WatchCanary("digest-of-canary-line-and-file")
	totals, err := f.CanaryAdd(context.Background(), "digest-of-canary-line-and-file", time.Now().Truncate(time.Minute), time.Minute, fleet.CanaryCounts{CanaryCross: 3})
	if err == nil && totals.CanaryCross > 100 {
		f.TryRollback(context.Background(), "digest-of-canary-line-and-file", "cross-province ratio")
	}
}
