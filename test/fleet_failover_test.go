package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
)

// failoverSlack is how long after a Redis failover every member may take
// to converge: the second (measured: 0.6 to 0.7 s on a quiet
// machine), and a second for a machine loaded by other builds.
const failoverSlack = 2 * time.Second

// TestFleetClusterFailover: three members share a Redis Cluster (3 masters,
// 3 replicas); the master holding the fleet's slot is killed during a
// stream of 60 changes (pins made and removed through the three members in
// turn). No acknowledged change is lost, and every member has them all
// within a second of the later of the promotion and the last change; three
// times, each with a fresh cluster.
func TestFleetClusterFailover(t *testing.T) {
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) { fleetFailoverRun(t) })
	}
}

func fleetFailoverRun(t *testing.T) {
	rc := testredis.StartCluster(t, 3, 1)
	e := newFleetEnv(t)
	addrs := strings.Join(rc.Addrs(), " ")
	ms := []*fleetMember{
		e.startVia(t, "a", addrs, "vantage telecom", ""),
		e.startVia(t, "b", addrs, "vantage telecom", ""),
		e.startVia(t, "c", addrs, "vantage unicom", ""),
	}
	slot := rc.Slot("gslb:fleet:{test}:state")
	want := map[string]bool{}
	var killed, promoted time.Time
	var wg sync.WaitGroup
	var lastAck time.Time
	for i := range 60 {
		m := ms[i%3]
		if i%6 == 5 {
			cidr := fmt.Sprintf("10.%d.0.0/16", i-3)
			m.must(t, "DELETE", "/v1/pins/"+cidr, "")
			delete(want, cidr)
		} else {
			cidr := fmt.Sprintf("10.%d.0.0/16", i)
			m.must(t, "POST", "/v1/pins", fmt.Sprintf(`{"cidr": %q, "nodes": ["bj"]}`, cidr))
			want[cidr] = true
		}
		lastAck = time.Now()
		if i == 20 {
			wg.Add(1)
			go func() { defer wg.Done(); killed, promoted = rc.Failover(slot, 60*time.Second) }()
		}
		time.Sleep(30 * time.Millisecond) // a stream, not a burst
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	from := lastAck
	if promoted.After(from) {
		from = promoted
	}
	wanted := slices.Sorted(maps.Keys(want))
	var converged time.Time
	for _, m := range ms {
		var got []string
		if !poll(60*time.Second, func() bool { got = pinsOf(t, m); return slices.Equal(got, wanted) }) {
			t.Fatalf("%s: pins %v, want %v", m.name, got, wanted)
		}
		converged = time.Now()
	}
	t.Logf("Failover %v after the kill; every member converged %v after the later of the promotion and the last change (%v after the kill)",
		promoted.Sub(killed), converged.Sub(from), converged.Sub(killed))
	if d := converged.Sub(from); d > failoverSlack {
		t.Errorf("The members converged %v after the promotion or the last change, want at most %v", d, failoverSlack)
	}
}

// pinsOf is the CIDRs of member m's pins, sorted.
func pinsOf(t *testing.T, m *fleetMember) []string {
	var ps []struct {
		CIDR string `json:"cidr"`
	}
	if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/pins", "")), &ps); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.CIDR)
	}
	slices.Sort(out)
	return out
}
