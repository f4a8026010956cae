package resolvers

import (
	"context"
	"net/netip"
	"sync"

	"github.com/gslbdns/gslb/geo"
)

// stash keeps a stopped instance's map for the next instance of the same
// server block, so that a Corefile reload keeps what was learned. CoreDNS
// stops the old instance before it starts the new one: the state moves
// when neither folds.
var stash = struct {
	sync.Mutex
	m map[string]*Map
}{m: map[string]*Map{}}

// Stash keeps m's state under id for Adopt; the map must no longer fold.
func (m *Map) Stash(id string) {
	stash.Lock()
	defer stash.Unlock()
	stash.m[id] = m
}

// Adopt takes the state the map stashed under id, if any, and publishes
// it; it reports whether there was one.
func (m *Map) Adopt(ctx context.Context, id string) bool {
	stash.Lock()
	old := stash.m[id]
	delete(stash.m, id)
	stash.Unlock()
	if old == nil || old == m {
		return false
	}
	old.mu.Lock()
	res, beacons, locs, stats, pub, last, pending := old.res, old.beacons, old.locs, old.stats, old.pub, old.last, old.pending
	old.res, old.beacons, old.locs, old.pending = map[netip.Prefix]*resolver{}, newBeaconTable(1), map[placeKey]*geo.Location{}, nil
	old.mu.Unlock()
	m.mu.Lock()
	m.res, m.beacons, m.locs, m.stats, m.pub, m.last, m.pending = res, beacons, locs, stats, pub, last, pending
	m.mu.Unlock()
	m.Cycle(ctx)
	return true
}
