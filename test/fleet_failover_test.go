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
	"github.com/gslbdns/gslb/internal/testsupport"
)

// failoverSlack is how long after a Redis failover every member may take
// to converge: the second (measured: 0.4 to 0.7 s on a shared
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
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			rc := testredis.StartCluster(t, 3, 1)
			slot := rc.Slot("gslb:fleet:{test}:state")
			fleetFailoverRun(t, strings.Join(rc.Addrs(), " "), "", func() (time.Time, time.Time) { return rc.Failover(slot, 60*time.Second) })
		})
	}
}

// TestFleetSentinelFailover: the same through Sentinels (a master, a
// replica, three sentinels), once.
func TestFleetSentinelFailover(t *testing.T) {
	s := testredis.StartSentinel(t, 1, 3)
	fleetFailoverRun(t, strings.Join(s.Addrs(), " "), "master "+testredis.SentinelMaster, func() (time.Time, time.Time) { return s.Failover(60 * time.Second) })
}

// fleetFailoverRun starts three members on Redis at addrs (with the redis
// block's lines opts), makes 60 changes, calls failover after the 21st,
// and checks that none is lost and how soon every member has them all.
func fleetFailoverRun(t *testing.T, addrs, opts string, failover func() (killed, promoted time.Time)) {
	e := newFleetEnv(t)
	var ms []*fleetMember
	for _, v := range [][2]string{{"a", "vantage telecom"}, {"b", "vantage telecom"}, {"c", "vantage unicom"}} {
		m := &fleetMember{name: v[0], dns: testsupport.FreeAddr(t), admin: testsupport.FreeAddr(t), metrics: testsupport.FreeAddr(t), redis: addrs, redisOpts: opts}
		m.conf = writeFile(t, e.dir, m.name+".Corefile", e.corefile(m, v[1], ""))
		m.launch(t)
		ms = append(ms, m)
	}
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
			go func() { defer wg.Done(); killed, promoted = failover() }()
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
