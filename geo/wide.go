package geo

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// wide merges adjacent IPv4 networks of a database that place clients
// alike into runs, at load time: an address's network then widens to the
// largest aligned supernet inside its run, and the reply's scope (which a
// resolver caches the answer for) with it. Only runs of two networks or
// more are kept. Immutable.
type wide struct {
	start, end []uint32 // inclusive, sorted, disjoint
	// units is the spread unit of each place (as shares counts them)
	// whose networks balance on units wider than a /24: see size.unit.
	units map[place]uint8
}

// SpreadUnits is how many units of equal weight a place must count
// before the spread may hash its networks on units wider than
// spread_prefix: with networks of sizes s_i a place counts
// (Σ s_i)² / Σ s_i² (their number when all are equal), and a node's share
// of the place then varies by a standard deviation of at most
// sqrt(p(1-p)/SpreadUnits) around its share p, 4.4% at p = 0.5.
const SpreadUnits = 128

// spreadMinNetworks: a place of fewer networks balances only by cutting
// them, as finely as spread_prefix says.
const spreadMinNetworks = 16

// size is what a place's networks weigh: the sum of their sizes, the sum
// of the squares of those of /24 or narrower, and how many wider ones it
// has of each length.
type size struct {
	sum, sumSq float64
	n          int
	wide       *[24]uint32
}

// add counts an aligned network of bits.
func (z *size) add(bits int) {
	n := float64(uint64(1) << (32 - bits))
	z.n++
	z.sum += n
	if bits >= 24 {
		z.sumSq += n * n
		return
	}
	if z.wide == nil {
		z.wide = new([24]uint32)
	}
	z.wide[bits]++
}

// unit is the least prefix length (the widest unit) at which the place,
// its wider networks cut to it, counts SpreadUnits units; 32 (cut to
// spread_prefix) when it does not even at /24, has fewer than
// spreadMinNetworks networks, or none wider than a /24.
func (z *size) unit() uint8 {
	if z.wide == nil || z.n < spreadMinNetworks {
		return 32
	}
	for c := 1; c <= 24; c++ { // from /1: SpreadBits 0 is "not measured"
		sq := z.sumSq
		for b, k := range z.wide {
			n := float64(uint64(1) << (32 - b))
			if b < c {
				sq += float64(k) * n * float64(uint64(1)<<(32-c)) // n/u units of u²
			} else {
				sq += float64(k) * n * n
			}
		}
		if z.sum*z.sum >= SpreadUnits*sq {
			return uint8(c)
		}
	}
	return 32
}

// unitBits is the spread unit of the place pl, see Location.SpreadBits;
// 0 for a small place.
func (w *wide) unitBits(pl place) uint8 {
	if w == nil {
		return 0
	}
	return w.units[pl.shares()]
}

// place is what of a network's location the decision reads: the city's
// name and the accuracy radius are left out.
type place struct {
	country, continent, province, isp string
	hasCoords                         bool
	lat, lon                          float64
	asn                               uint32
}

// shares is the place whose clients the spread shares among the same
// nodes: its province, not its city's coordinates (a province's nodes are
// near-equals to most of its cities).
func (p place) shares() place {
	p.hasCoords, p.lat, p.lon = false, 0, 0
	return p
}

func placeKey(l *Location) place {
	return place{l.Country, l.Continent, l.Province, l.ISP, l.HasCoords, l.Lat, l.Lon, l.ASN}
}

// maxWideNetworks bounds the networks read: a database larger than this
// keeps its own networks.
const maxWideNetworks = 1 << 24

// buildWide reads r's IPv4 networks in address order; placeOf gives each
// record's place, decoded once per record (networks share records).
func buildWide(r *maxminddb.Reader, placeOf func(maxminddb.Result) (place, bool)) *wide {
	var b wideBuilder
	// Empty networks too, as gaps: each step of the walk then counts
	// towards maxWideNetworks, however the tree shares its nodes.
	for res := range r.NetworksWithin(netip.PrefixFrom(netip.IPv4Unspecified(), 0), maxminddb.IncludeNetworksWithoutData()) {
		if res.Err() != nil {
			return &wide{}
		}
		if !res.Found() {
			if !b.gap() {
				return &wide{}
			}
			continue
		}
		if !b.add(res.Prefix(), uint64(res.Offset()), func() (place, bool) { return placeOf(res) }) {
			return &wide{}
		}
	}
	return b.done()
}

// buildWideIPDB is buildWide for an IPIP.net database: the country, the
// province and the carrier that mergeIPDB reads.
func buildWideIPDB(r *ipdb.Reader) *wide {
	var b wideBuilder
	ok := true
	all := r.Networks4(func(p netip.Prefix, id uint32) bool {
		ok = b.add(p, uint64(id), func() (place, bool) {
			rec, ok := r.RecordOf(id)
			if !ok {
				return place{}, false
			}
			return ipdbPlace(rec), true
		})
		return ok
	})
	if !ok || !all {
		return &wide{}
	}
	return b.done()
}

// wideBuilder gathers the runs from networks in address order.
type wideBuilder struct {
	w          wide
	seen       map[uint64]place
	sizes      map[place]*size
	have       bool
	cur        place
	start, end uint32
	count, n   int
}

// add adds network p whose record is id; placeOf decodes it the first
// time. It reports false past maxWideNetworks.
func (b *wideBuilder) add(p netip.Prefix, id uint64, placeOf func() (place, bool)) bool {
	if b.n++; b.n > maxWideNetworks {
		return false
	}
	if !p.Addr().Is4() {
		return true
	}
	if b.seen == nil {
		b.seen, b.sizes = map[uint64]place{}, map[place]*size{}
	}
	pl, ok := b.seen[id]
	if !ok {
		if pl, ok = placeOf(); !ok {
			b.flush()
			b.have = false
			return true
		}
		b.seen[id] = pl
	}
	a := p.Masked().Addr().As4()
	s := binary.BigEndian.Uint32(a[:])
	e := s | uint32(uint64(1)<<(32-p.Bits())-1)
	if b.have && pl == b.cur && s == b.end+1 {
		b.end, b.count = e, b.count+1
		return true
	}
	b.flush()
	b.have, b.cur, b.start, b.end, b.count = true, pl, s, e, 1
	return true
}

// gap is a network without a record: it ends the run. It reports false
// past maxWideNetworks.
func (b *wideBuilder) gap() bool {
	if b.n++; b.n > maxWideNetworks {
		return false
	}
	b.flush()
	b.have = false
	return true
}

func (b *wideBuilder) flush() {
	if !b.have {
		return
	}
	if b.count > 1 {
		b.w.start, b.w.end = append(b.w.start, b.start), append(b.w.end, b.end)
	}
	// The run's networks as bits widens them: its largest aligned blocks.
	z := b.sizes[b.cur.shares()]
	if z == nil {
		z = &size{}
		b.sizes[b.cur.shares()] = z
	}
	for s, e := uint64(b.start), uint64(b.end); s <= e; {
		n := s & -s
		if s == 0 {
			n = 1 << 32
		}
		for s+n-1 > e {
			n >>= 1
		}
		z.add(32 - (bits.Len64(n) - 1))
		s += n
	}
}

func (b *wideBuilder) done() *wide {
	b.flush()
	b.have = false
	for pl, z := range b.sizes {
		if u := z.unit(); u < 32 {
			if b.w.units == nil {
				b.w.units = map[place]uint8{}
			}
			b.w.units[pl] = u
		}
	}
	w := b.w // not &b.w: that would keep the builder's maps
	return &w
}

// offHeap moves the runs outside the Go heap, for owner's life.
func (w *wide) offHeap(owner *DB) {
	w.start, w.end = offHeapUint32s(w.start, owner), offHeapUint32s(w.end, owner)
}

// bits widens bits, the length of addr's network, to the largest aligned
// supernet inside addr's run.
func (w *wide) bits(addr netip.Addr, bits uint8) uint8 {
	if w == nil || !addr.Is4() || len(w.start) == 0 {
		return bits
	}
	a4 := addr.As4()
	a := binary.BigEndian.Uint32(a4[:])
	i, found := slices.BinarySearch(w.start, a)
	if !found {
		i--
	}
	if i < 0 || a > w.end[i] {
		return bits
	}
	for bits > 0 {
		mask := ^uint32(0) << (32 - (bits - 1))
		if s := a & mask; s < w.start[i] || s|^mask > w.end[i] {
			break
		}
		bits--
	}
	return bits
}

// cityPlace is a City record's place.
func cityPlace(res maxminddb.Result) (place, bool) {
	var r cityRecord
	var l Location
	if res.Decode(&r) != nil || !l.fillCity(&r) {
		return place{}, false
	}
	return placeKey(&l), true
}

// asnPlace is an ASN record's place.
func asnPlace(res maxminddb.Result) (place, bool) {
	var r asnRecord
	var l Location
	if res.Decode(&r) != nil || !l.fillASN(&r) {
		return place{}, false
	}
	return placeKey(&l), true
}
