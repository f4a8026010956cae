package resolvers

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// Snapshot is one cycle's populations, immutable: the query path looks a
// resolver up without locks or allocations.
type Snapshot struct {
	At time.Time
	// By /24 (/48): one map lookup finds a resolver's population or
	// tells that it has none.
	v4 map[uint32]*network
	v6 map[uint64]*network
	n  int
}

// network is the populations of one /24 (/48): the farm's, and those of
// its resolvers, by address.
type network struct {
	farm  *Population
	keys  []uint64 // the resolvers' addresses (/64s), sorted
	hosts []*Population
}

// Len is the count of populations that decide.
func (s *Snapshot) Len() int { return s.n }

// Population is the clients of one resolver (or farm) that decides for
// its queries without usable ECS: the place most of them are in.
type Population struct {
	Resolver netip.Prefix
	Loc      geo.Location // the largest place, as the locator placed its first client
	Share    float64      // of the clients, in the largest place
	Samples  float64      // the clients learned, decayed
	Learned  time.Time    // the last one
	// Places are its largest places (at most TopPlaces, the largest
	// first), Shares their shares of its clients.
	Places []*geo.Location
	Shares []float64
	// Choices cache which of Places a decision is made for, per view,
	// record and type: the decider's, read and replaced atomically.
	Choices [ChoiceSlots]atomic.Pointer[Choice]
}

// ChoiceSlots is the size of Choices, a power of 2: a resolver's busiest
// records and types each keep their own.
const ChoiceSlots = 16

// TopPlaces bounds the places a population decides over.
const TopPlaces = 4

// Choice is the place of a population a decision was made for, under a
// view (any pointer that changes with it), record and type.
type Choice struct {
	View, Record any
	QType        uint16
	Place        int
	// Share is the share of the clients whose places the chosen node
	// wins: the population it was decided for.
	Share float64
}

// Lookup is the population that decides for resolver a: its own, else
// its /24's (/48's); nil when neither is mapped.
func (s *Snapshot) Lookup(a netip.Addr) *Population {
	var n *network
	var k uint64
	if a.Is4() {
		if len(s.v4) == 0 {
			return nil
		}
		b := a.As4()
		k = uint64(binary.BigEndian.Uint32(b[:]))
		n = s.v4[uint32(k)&0xffffff00]
	} else {
		if len(s.v6) == 0 {
			return nil
		}
		b := a.As16()
		k = binary.BigEndian.Uint64(b[:8])
		n = s.v6[k&^0xffff]
	}
	if n == nil {
		return nil
	}
	if i, ok := slices.BinarySearch(n.keys, k); ok {
		return n.hosts[i]
	}
	return n.farm
}

// ResolverJSON is one resolver in GET /v1/resolvers.
type ResolverJSON struct {
	Resolver string  `json:"resolver"` // an address, or a /24 (/48) for a farm
	Province string  `json:"province"` // where the resolver itself is
	ISP      string  `json:"isp"`
	Queries  float64 `json:"queries"` // decayed by half_life
	Total    uint64  `json:"total"`   // since gslb started (or the entry was made)
	ECSShare float64 `json:"ecs_share"`
	// ECSPrefixes counts the ECS source prefix lengths seen, by length.
	ECSPrefixes map[uint8]uint64 `json:"ecs_prefixes"`
	Beacons     uint64           `json:"beacons"` // clients joined by beacons
	Population  []PlaceShare     `json:"population"`
	Samples     float64          `json:"samples"`
	AgeSeconds  float64          `json:"age_s"` // since the last client learned; -1: none
	Deciding    bool             `json:"deciding"`
	// TTL is the last answer's ttl; TTLKept how long the resolver keeps
	// answers, from its re-query intervals (0: too few).
	TTL     uint32  `json:"ttl_s"`
	TTLKept float64 `json:"ttl_kept_s"`
}

// PlaceShare is one place of a population.
type PlaceShare struct {
	Country  string  `json:"country"`
	Province string  `json:"province"`
	ISP      string  `json:"isp"`
	Share    float64 `json:"share"`
}

// PlaceJSON sums the resolvers of one province and carrier (their own).
type PlaceJSON struct {
	Province  string  `json:"province"`
	ISP       string  `json:"isp"`
	Resolvers int     `json:"resolvers"`
	Queries   float64 `json:"queries"`
	ECSShare  float64 `json:"ecs_share"`
	Mapped    int     `json:"mapped"` // with a population that decides
	// TTLKept is the median of its resolvers' kept ttl (0: none known).
	TTLKept float64 `json:"ttl_kept_s"`
}

// build makes the snapshot of the map's state: the populations that decide.
func (m *Map) build(now time.Time) *Snapshot {
	s := &Snapshot{At: now, v4: map[uint32]*network{}, v6: map[uint64]*network{}}
	for _, r := range m.res {
		if r.weight < m.cfg.MinSamples {
			continue
		}
		if ls, sh := r.tops(TopPlaces); len(ls) > 0 {
			m.index(s, &Population{Resolver: r.key, Loc: *ls[0], Share: sh[0], Samples: r.weight, Learned: r.learned, Places: ls, Shares: sh})
		}
	}
	return s
}

// tops are r's n largest places and their shares, the largest first.
func (r *resolver) tops(n int) ([]*geo.Location, []float64) {
	ls := make([]*geo.Location, 0, len(r.places))
	for l := range r.places {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *geo.Location) int {
		switch wa, wb := r.places[a], r.places[b]; {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		case placeLess(*a, *b):
			return -1
		case placeLess(*b, *a):
			return 1
		}
		return 0
	})
	ls = ls[:min(n, len(ls))]
	shares := make([]float64, len(ls))
	for i, l := range ls {
		shares[i] = r.places[l] / r.weight
	}
	return ls, shares
}

// exact: the entry is one resolver's, not a farm's.
func (r *resolver) exact() bool {
	return r.key.IsSingleIP() || r.key.Addr().Is6() && r.key.Bits() == 64
}

// Observatory is GET /v1/resolvers: the map's resolvers, the busiest
// first, and their sums per own province and carrier.
type Observatory struct {
	At      time.Time         `json:"at"`
	Queries map[string]uint64 `json:"queries"` // by how they were decided: ecs, population, address
	Beacons map[string]uint64 `json:"beacons"`
	// Lost counts the queries the ring lost between two cycles (past
	// 16,384 a cycle, the figures are a sample), Dropped the entries not
	// kept past max_resolvers.
	Lost      uint64         `json:"lost"`
	Dropped   uint64         `json:"dropped"`
	Resolvers []ResolverJSON `json:"resolvers"`
	Places    []PlaceJSON    `json:"places"`
}

// Observatory reports the map as it is now.
func (m *Map) Observatory() Observatory {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	o := Observatory{At: now, Queries: map[string]uint64{"ecs": m.stats.ECS, "population": m.stats.Population, "address": m.stats.Address},
		Beacons: map[string]uint64{}, Lost: m.stats.Lost, Dropped: m.stats.Dropped, Resolvers: []ResolverJSON{}, Places: []PlaceJSON{}}
	for k, v := range m.stats.Beacons {
		o.Beacons[k] = v
	}
	type acc struct {
		p    PlaceJSON
		ecs  float64
		kept []float64
	}
	places := map[[2]string]*acc{}
	for _, r := range m.res {
		j := ResolverJSON{Resolver: r.key.String(), Province: r.self.Province, ISP: r.self.ISP, Queries: round(r.queries),
			Total: r.total, ECSPrefixes: maps(r.prefixes), Beacons: r.nBeacons, Samples: round(r.weight), AgeSeconds: -1,
			TTL: r.ttl, TTLKept: r.kept(), Population: []PlaceShare{}, Deciding: r.weight >= m.cfg.MinSamples && len(r.places) > 0}
		if r.exact() {
			j.Resolver = r.key.Addr().String()
		}
		if r.queries > 0 {
			j.ECSShare = round(r.ecs / r.queries)
		}
		if !r.learned.IsZero() {
			j.AgeSeconds = round(now.Sub(r.learned).Seconds())
		}
		for l, w := range r.places {
			j.Population = append(j.Population, PlaceShare{l.Country, l.Province, l.ISP, round(w / r.weight)})
		}
		slices.SortFunc(j.Population, func(a, b PlaceShare) int {
			if a.Share != b.Share {
				if a.Share > b.Share {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Country+a.Province+a.ISP, b.Country+b.Province+b.ISP)
		})
		o.Resolvers = append(o.Resolvers, j)
		if !r.exact() {
			continue
		}
		pk := [2]string{r.self.Province, r.self.ISP}
		a := places[pk]
		if a == nil {
			a = &acc{p: PlaceJSON{Province: pk[0], ISP: pk[1]}}
			places[pk] = a
		}
		a.p.Resolvers++
		a.p.Queries += r.queries
		a.ecs += r.ecs
		if j.Deciding {
			a.p.Mapped++
		}
		if k := j.TTLKept; k > 0 {
			a.kept = append(a.kept, k)
		}
	}
	slices.SortFunc(o.Resolvers, func(a, b ResolverJSON) int {
		if a.Queries != b.Queries {
			if a.Queries > b.Queries {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Resolver, b.Resolver)
	})
	for _, a := range places {
		if a.p.Queries > 0 {
			a.p.ECSShare = round(a.ecs / a.p.Queries)
		}
		a.p.Queries = round(a.p.Queries)
		if len(a.kept) > 0 {
			slices.Sort(a.kept)
			a.p.TTLKept = a.kept[len(a.kept)/2]
		}
		o.Places = append(o.Places, a.p)
	}
	slices.SortFunc(o.Places, func(a, b PlaceJSON) int { return strings.Compare(a.Province+" "+a.ISP, b.Province+" "+b.ISP) })
	return o
}

func placeLess(a, b geo.Location) bool {
	return a.Country+a.Province+a.ISP < b.Country+b.Province+b.ISP
}

func (m *Map) index(s *Snapshot, p *Population) {
	s.n++
	var n *network
	a := p.Resolver.Addr()
	if a.Is4() {
		b := a.As4()
		k := binary.BigEndian.Uint32(b[:]) & 0xffffff00
		if n = s.v4[k]; n == nil {
			n = &network{}
			s.v4[k] = n
		}
	} else {
		b := a.As16()
		k := binary.BigEndian.Uint64(b[:8]) &^ 0xffff
		if n = s.v6[k]; n == nil {
			n = &network{}
			s.v6[k] = n
		}
	}
	if r := p.Resolver; r.Bits() == 24 && a.Is4() || r.Bits() == 48 && a.Is6() {
		n.farm = p
		return
	}
	var k uint64
	if a.Is4() {
		b := a.As4()
		k = uint64(binary.BigEndian.Uint32(b[:]))
	} else {
		b := a.As16()
		k = binary.BigEndian.Uint64(b[:8])
	}
	i, _ := slices.BinarySearch(n.keys, k)
	n.keys = slices.Insert(n.keys, i, k)
	n.hosts = slices.Insert(n.hosts, i, p)
}

func maps(m map[uint8]uint64) map[uint8]uint64 {
	out := make(map[uint8]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func round(f float64) float64 {
	return float64(int64(f*1000+0.5)) / 1000
}
