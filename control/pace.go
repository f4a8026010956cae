package control

import (
	"time"

	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
)

// The warm-up of a view is background work beside the queries: on a
// server with one CPU (a CoreDNS pinned to a core, GOMAXPROCS 1) a query
// waits behind it, and the network poller is not read, until it sleeps.
// So it works in slices of paceSlice and then rests, taking at most
// paceShare of a CPU: a query waits for one slice at most, and the
// warm-up's allocations, which set off the collector, are spread out.
const (
	paceSlice = 100 * time.Microsecond
	paceShare = 0.25
	// paceDecisions is about how many decisions a slice prepares (each
	// takes 10-20µs with a hundred nodes): the clients handed to one Warm.
	paceDecisions = 4
)

// warmPaced is v.Warm(clients, limit, stop, current) in slices, resting
// between them; it returns how many decisions the cache holds for the
// clients it went through.
func warmPaced(v *policy.View, clients []scoring.Client, limit int, stop <-chan struct{}, current func() bool) int {
	per := max(1, paceDecisions/max(1, 2*len(v.Table.Names))) // a record's A and AAAA
	n := 0
	start := time.Now()
	for i := 0; i < len(clients) && n < limit; i += per {
		n += v.Warm(clients[i:min(i+per, len(clients))], limit-n, stop, current)
		select {
		case <-stop:
			return n
		default:
		}
		if !current() {
			return n
		}
		if worked := time.Since(start); worked >= paceSlice {
			t := time.NewTimer(time.Duration(float64(worked) * (1 - paceShare) / paceShare))
			select {
			case <-stop:
				t.Stop()
				return n
			case <-t.C:
			}
			start = time.Now()
		}
	}
	return n
}
