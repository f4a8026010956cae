package resolvers

import (
	"context"
	"hash/maphash"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// Placer is where gslb's own locator puts an address.
type Placer func(ctx context.Context, a netip.Addr) geo.Location

// Map learns the resolvers' populations in the background and publishes
// them as Snapshots. The query path only calls Observe, BeaconQuery and
// Snapshot, none of which locks or allocates.
type Map struct {
	cfg    Config
	labels *Labeler // nil without a beacon
	place  Placer
	now    func() time.Time
	ring   ring
	// beaconQ carries the beacon queries from the query path to the fold;
	// full, they are dropped and counted.
	beaconQ chan beaconQuery
	snap    atomic.Pointer[Snapshot]
	// detection is how long the probes take to find a node down.
	detection atomic.Int64
	// beaconDrops counts the beacon queries a full beaconQ dropped.
	beaconDrops atomic.Uint64

	mu      sync.Mutex
	res     map[netip.Prefix]*resolver
	beacons *beaconTable
	last    time.Time
	joins   map[sourceKey]int // this cycle's joins per (source, resolver)
	// locs interns the places: the first client's location stands for
	// its place.
	locs  map[placeKey]*geo.Location
	stats Stats
	pub   Stats // the counts last added to the metrics
	// share hands events to the fleet; nil outside one. asked are the
	// beacon queries to share at the next cycle, pending the reports
	// waiting for another member's query.
	share   func([]byte)
	asked   []Ask
	pending []pending
}

// Stats are the map's counters since it started.
type Stats struct {
	Lost, Dropped uint64 // observations lost to the ring, resolvers not kept
	// Queries by how they were decided.
	ECS, Population, Address uint64
	Beacons                  map[string]uint64 // beacon queries and reports by result
}

type beaconQuery struct {
	resolver netip.Addr
	label    string // lower case
	at       time.Time
}

type sourceKey struct {
	source string
	res    netip.Prefix
}

// resolver is what the map knows of one resolver address or farm.
type resolver struct {
	key          netip.Prefix
	self         geo.Location // the resolver's own place
	placed       bool
	queries, ecs float64 // decayed
	total        uint64
	prefixes     map[uint8]uint64          // ECS source prefix lengths seen
	places       map[*geo.Location]float64 // the clients by place (interned), decayed
	weight       float64                   // the places' sum
	learned      time.Time                 // the last client learned
	names        [nameSlots]nameSeen
	intervals    [intervalBuckets]float64 // re-query intervals, decayed
	ttl          uint32                   // the ttl last answered
	nBeacons     uint64
}

type placeKey struct{ country, province, isp string }

// maxInterned bounds the places the map interns; past it a place's
// location is its own copy.
const maxInterned = 1 << 14

// beaconQueue bounds the beacon queries between two cycles.
const beaconQueue = 1 << 14

// nameSlots are the names whose re-query intervals a resolver keeps.
const nameSlots = 8

type nameSeen struct {
	hash uint32
	at   time.Time
}

// intervalBuckets are log2 buckets of seconds: 1, 2, 4 ... 32768.
const intervalBuckets = 16

var seed = maphash.MakeSeed()

// NameHash is the hash Observe takes for a question's name.
func NameHash(name string) uint32 { return uint32(maphash.String(seed, name)) }

// New returns a Map for cfg; place locates clients and resolvers.
func New(cfg Config, place Placer, now func() time.Time) (*Map, error) {
	if now == nil {
		now = time.Now
	}
	m := &Map{cfg: cfg, place: place, now: now, beaconQ: make(chan beaconQuery, beaconQueue),
		res: map[netip.Prefix]*resolver{}, beacons: newBeaconTable(MaxBeacons), joins: map[sourceKey]int{},
		locs: map[placeKey]*geo.Location{}, stats: Stats{Beacons: map[string]uint64{}}}
	if cfg.Beacon != "" {
		l, err := NewLabeler(cfg.Key)
		if err != nil {
			return nil, err
		}
		m.labels = l
	}
	m.snap.Store(&Snapshot{})
	return m, nil
}

// SetDetection sets how long the probes take at the most to find a node
// down: with the ttl resolvers keep, the real failover window.
func (m *Map) SetDetection(d time.Duration) { m.detection.Store(int64(d)) }

// Config is the map's block.
func (m *Map) Config() Config { return m.cfg }

// Labeler mints the map's beacon labels; nil without a beacon.
func (m *Map) Labeler() *Labeler { return m.labels }

// Snapshot is the populations the last cycle published.
func (m *Map) Snapshot() *Snapshot { return m.snap.Load() }

// Observe records one decided query: its resolver, the ECS client when the
// decision used it, the option's family and source prefix (0: none),
// whether a population decided it, the name's hash and the answer's ttl.
func (m *Map) Observe(res, client netip.Addr, ecsFam, ecsBits uint8, fromECS, byPop bool, name uint32, ttl uint32) {
	m.ring.put(res, client, ecsFam, ecsBits, fromECS, byPop, name, ttl)
}

// BeaconQuery records that resolver asked for a beacon label; it reports
// whether the label is one gslb minted within the window.
func (m *Map) BeaconQuery(resolver netip.Addr, label string) bool {
	if m.labels == nil {
		return false
	}
	minted, ok := m.labels.Check(label)
	if !ok || m.now().Sub(minted) > m.cfg.Window || minted.Sub(m.now()) > time.Minute {
		return false
	}
	select {
	case m.beaconQ <- beaconQuery{resolver: resolver, label: strings.ToLower(label), at: m.now()}:
	default:
		m.beaconDrops.Add(1)
	}
	return true
}

// keys are the entries a resolver address feeds: itself, and its /24
// (/48) standing for a farm of resolvers.
func keys(a netip.Addr) [2]netip.Prefix {
	if a.Is4() {
		return [2]netip.Prefix{netip.PrefixFrom(a, 32), netip.PrefixFrom(a, 24).Masked()}
	}
	return [2]netip.Prefix{netip.PrefixFrom(a, 64).Masked(), netip.PrefixFrom(a, 48).Masked()}
}

// entry is key's resolver, made when there is room.
func (m *Map) entry(k netip.Prefix) *resolver {
	r := m.res[k]
	if r == nil {
		if len(m.res) >= 2*m.cfg.MaxResolvers {
			m.stats.Dropped++
			return nil
		}
		r = &resolver{key: k, places: map[*geo.Location]float64{}, prefixes: map[uint8]uint64{}}
		m.res[k] = r
	}
	return r
}

// Cycle folds what came in since the last cycle, decays, prunes to the
// bound, and publishes a new snapshot.
func (m *Map) Cycle(ctx context.Context) *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.takeBeacons()
	m.shareAsks()
	m.retryPending(ctx)
	m.stats.Lost += m.ring.drain(func(o *obs) { m.fold(ctx, o, now) })
	if !m.last.IsZero() && m.cfg.HalfLife > 0 {
		m.decay(math.Exp2(-now.Sub(m.last).Seconds() / m.cfg.HalfLife.Seconds()))
	}
	m.last = now
	m.prune()
	clear(m.joins)
	for _, r := range m.res {
		if !r.placed {
			r.self, r.placed = m.place(ctx, r.key.Addr()), true
		}
	}
	s := m.build(now)
	m.snap.Store(s)
	m.publishMetrics(s, &m.stats, &m.pub)
	return s
}

// fold takes one observation.
func (m *Map) fold(ctx context.Context, o *obs, now time.Time) {
	switch {
	case o.fromECS:
		m.stats.ECS++
	case o.byPop:
		m.stats.Population++
	default:
		m.stats.Address++
	}
	var loc *geo.Location
	learn := o.fromECS && o.client.IsValid()
	if learn {
		loc = m.intern(m.place(ctx, o.client))
		learn = loc != nil
	}
	for i, k := range keys(o.resolver) {
		r := m.entry(k)
		if r == nil {
			continue
		}
		r.queries++
		r.total++
		if o.ecsBits > 0 {
			r.ecs++
			r.prefixes[o.ecsBits]++
		}
		if learn {
			r.learn(loc, now)
		}
		if i == 0 && o.name != 0 {
			r.requery(o.name, o.ttl, now)
		}
	}
}

// intern is the location that stands for loc's place; nil for a client
// the locator cannot place, which says nothing.
func (m *Map) intern(loc geo.Location) *geo.Location {
	if loc.Country == "" && loc.ISP == "" {
		return nil
	}
	k := placeKey{loc.Country, loc.Province, loc.ISP}
	if l := m.locs[k]; l != nil {
		return l
	}
	l := &loc
	if len(m.locs) < maxInterned {
		m.locs[k] = l
	}
	return l
}

// learn adds one client at loc to r's population.
func (r *resolver) learn(loc *geo.Location, now time.Time) {
	if _, ok := r.places[loc]; !ok && len(r.places) >= MaxPlaces {
		r.dropSmallest()
	}
	r.places[loc]++
	r.weight++
	r.learned = now
}

func (r *resolver) dropSmallest() {
	var min *geo.Location
	w := math.Inf(1)
	for l, pw := range r.places {
		if pw < w || pw == w && placeLess(*l, *min) {
			min, w = l, pw
		}
	}
	r.weight -= w
	delete(r.places, min)
}

// requery notes a query for the name hashed h: the time since the last
// one for it is how long the resolver kept the answer (when its clients
// keep asking).
func (r *resolver) requery(h uint32, ttl uint32, now time.Time) {
	if ttl > 0 {
		r.ttl = ttl
	}
	oldest := 0
	for i := range r.names {
		n := &r.names[i]
		if n.hash == h && !n.at.IsZero() {
			if d := now.Sub(n.at); d >= time.Second {
				b := min(intervalBuckets-1, int(math.Log2(d.Seconds())))
				r.intervals[b]++
				n.at = now
			}
			return
		}
		if n.at.Before(r.names[oldest].at) {
			oldest = i
		}
	}
	r.names[oldest] = nameSeen{hash: h, at: now}
}

// kept is the shortest interval at which r re-asks (its 10th percentile,
// the bucket's lower bound, in seconds); 0 with fewer than 5 intervals.
func (r *resolver) kept() float64 {
	var n float64
	for _, c := range r.intervals {
		n += c
	}
	if n < 5 {
		return 0
	}
	var acc float64
	for b, c := range r.intervals {
		acc += c
		if acc >= 0.1*n {
			return math.Exp2(float64(b))
		}
	}
	return 0
}

func (m *Map) decay(f float64) {
	for k, r := range m.res {
		r.queries *= f
		r.ecs *= f
		r.weight = 0
		for l, w := range r.places {
			w *= f
			if w < 0.01 {
				delete(r.places, l)
				continue
			}
			r.places[l] = w
			r.weight += w
		}
		for i := range r.intervals {
			r.intervals[i] *= f
		}
		if r.queries < 0.01 && len(r.places) == 0 {
			delete(m.res, k)
		}
	}
}

// prune keeps the MaxResolvers busiest entries.
func (m *Map) prune() {
	if len(m.res) <= m.cfg.MaxResolvers {
		return
	}
	all := make([]*resolver, 0, len(m.res))
	for _, r := range m.res {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b *resolver) int {
		switch {
		case a.queries+a.weight > b.queries+b.weight:
			return -1
		case a.queries+a.weight < b.queries+b.weight:
			return 1
		}
		return a.key.Addr().Compare(b.key.Addr())
	})
	for _, r := range all[m.cfg.MaxResolvers:] {
		delete(m.res, r.key)
		m.stats.Dropped++
	}
}
