package locate

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/offheap"
)

// The precomputed table's compact form: per range 6 bytes (the low half
// of its first address, its value id and Bits), per value 12 bytes (its
// place, carrier and MaxMind view ids), places and carriers as
// pointer-free records whose strings are ids into one small table. The
// big arrays live off the Go heap, which neither scans nor doubles them.

// noVal marks a range the table does not answer for: a special range, one
// no database can bound, and everything past where the budget ran out.
const noVal = ^uint32(0)

// maxVals bounds the value ids (24 bits: the low 8 of a range's word are
// its Bits); noVal's id is the last.
const maxVals = 1<<24 - 1

// Flags of a tplace.
const (
	flagCoords = 1 << iota
	flagProvinceCoords
)

// tplace is where a value places a client, its strings as ids.
type tplace struct {
	lat, lon                           float64
	country, continent, province, city uint32
	radius                             uint16
	spread                             uint8
	source                             geo.Source
	flags                              uint8
}

// tcarrier is a value's raw carrier; the source decides how the carrier
// table maps it.
type tcarrier struct {
	isp, asn uint32
	source   geo.Source
}

// tval is a value: a place, a carrier and what MaxMind said (an index
// into others; 0 is the zero Other).
type tval struct {
	place, carrier, other uint32
}

// tableData is a walk's arrays; dir, lo, val, vals, places and carriers
// are off the heap, freed once the tableData is unreachable: a reader
// keeps the table that points here alive while it reads.
type tableData struct {
	dir      []uint32 // dir[h]..dir[h+1] are the ranges of /16 h
	lo       []uint16 // each range's first address, low 16 bits; sorted within its /16
	val      []uint32 // each range's value id<<8 | Bits; noVal: not answered here
	vals     []tval
	places   []tplace
	carriers []tcarrier
	strs     strTab      // on the heap: the ids' strings, each once
	others   []geo.Other // on the heap: few
	bytes    int64
}

// Per-element sizes, for the budget.
const (
	dirBytes     = (1<<16 + 1) * 4
	rangeBytes   = 2 + 4
	valBytes     = int64(unsafe.Sizeof(tval{}))
	placeBytes   = int64(unsafe.Sizeof(tplace{}))
	carrierBytes = int64(unsafe.Sizeof(tcarrier{})) + int64(unsafe.Sizeof("")) // and its normalized name
	otherBytes   = int64(unsafe.Sizeof(geo.Other{}))
	strBytes     = int64(unsafe.Sizeof(""))
)

// ranges is the number of ranges.
func (d *tableData) ranges() int { return len(d.lo) }

// find returns the value id and Bits of the range that holds a.
func (d *tableData) find(a uint32) (uint32, uint8, bool) {
	h := a >> 16
	lo, hi := d.dir[h], d.dir[h+1]
	if lo == hi {
		return 0, 0, false
	}
	low := uint16(a)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if d.lo[m] <= low {
			lo = m
		} else {
			hi = m
		}
	}
	v := d.val[lo]
	// The arrays are freed once d is unreachable: not before they are read.
	runtime.KeepAlive(d)
	return v >> 8, uint8(v), v != noVal
}

// value is value v's MaxMind view and carrier id.
func (d *tableData) value(v uint32) (geo.Other, uint32) {
	tv := &d.vals[v]
	other, carrier := d.others[tv.other], tv.carrier
	runtime.KeepAlive(d)
	return other, carrier
}

// location materializes value v with Bits bits, its carrier's name isp
// (raw or normalized), into loc: no allocation, the strings are the
// table's. Into loc, not returned: a returned Location is a copy on the
// caller's frame, which deepens the query's stack past its next size.
func (d *tableData) location(v uint32, bits uint8, isp *string, loc *geo.Location) {
	tv := &d.vals[v]
	p, c := &d.places[tv.place], &d.carriers[tv.carrier]
	name := d.strs.at(c.isp)
	if isp != nil {
		name = *isp
	}
	// Field by field: a composite literal is built on this frame first.
	loc.Country, loc.Continent, loc.Province, loc.City = d.strs.at(p.country), d.strs.at(p.continent), d.strs.at(p.province), d.strs.at(p.city)
	loc.HasCoords, loc.Lat, loc.Lon = p.flags&flagCoords != 0, p.lat, p.lon
	loc.ProvinceCoords, loc.Radius = p.flags&flagProvinceCoords != 0, p.radius
	loc.ISP, loc.ASN, loc.Bits, loc.SpreadBits, loc.Source, loc.Special = name, c.asn, bits, p.spread, p.source, false
	runtime.KeepAlive(d)
}

// otherOK is whether value v has MaxMind's view to compare, and its
// carrier id: what the query path reads of value, without the view.
func (d *tableData) otherOK(v uint32) (bool, uint32) {
	tv := &d.vals[v]
	ok, carrier := d.others[tv.other].OK, tv.carrier
	runtime.KeepAlive(d)
	return ok, carrier
}

// encoder interns a walk's values.
type encoder struct {
	d        *tableData
	strs     strSet // the strings, until done packs them
	places   hashIndex[tplace]
	carriers map[tcarrier]uint32
	vals     map[tval]uint32
	others   map[geo.Other]uint32
	// last is the value last interned, for the run of equal ones.
	last      memoValue
	lastID    uint32
	strsBytes int64
}

func newEncoder() *encoder {
	e := &encoder{d: &tableData{}, places: newHashIndex[tplace](),
		carriers: map[tcarrier]uint32{}, vals: map[tval]uint32{}, others: map[geo.Other]uint32{}, lastID: noVal}
	e.str("")
	e.other(geo.Other{})
	return e
}

func (e *encoder) str(s string) uint32 {
	id, added := e.strs.id(s)
	if added {
		e.strsBytes += strBytes + int64(len(s))
	}
	return id
}

// done packs the strings into the table: one object for the collector
// to mark, and no pointer per string to scan (GeoLite2-City has some
// 180,000), on the query's CPU.
func (e *encoder) done() {
	e.d.strs = e.strs.pack()
	e.strs = strSet{}
}

// strSet gives each distinct string an id, in the order they come.
type strSet struct {
	ids  map[string]uint32
	list []string
}

// id is s's id; added: s is new.
func (s *strSet) id(x string) (id uint32, added bool) {
	if id, ok := s.ids[x]; ok {
		return id, false
	}
	if s.ids == nil {
		s.ids = map[string]uint32{}
	}
	id = uint32(len(s.list))
	s.ids[x] = id
	s.list = append(s.list, x)
	return id, true
}

// pack is the strings packed, with their ids.
func (s *strSet) pack() strTab { return packStrs(s.list) }

// strTab is strings packed in one: string i is all[offs[i]:offs[i+1]].
type strTab struct {
	all  string
	offs []uint32
}

func packStrs(list []string) strTab {
	n := 0
	for _, s := range list {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	offs := make([]uint32, 1, len(list)+1)
	for _, s := range list {
		b.WriteString(s)
		offs = append(offs, uint32(b.Len()))
	}
	return strTab{all: b.String(), offs: offs}
}

// at is string i; a part of all, not a copy.
func (t *strTab) at(i uint32) string { return t.all[t.offs[i]:t.offs[i+1]] }

// len is how many strings t holds.
func (t *strTab) len() int { return max(len(t.offs)-1, 0) }

func (e *encoder) other(o geo.Other) uint32 {
	if id, ok := e.others[o]; ok {
		return id
	}
	id := uint32(len(e.d.others))
	e.d.others = append(e.d.others, o)
	e.others[o] = id
	return id
}

// id interns loc (but its Bits) and other; noVal past maxVals.
func (e *encoder) id(loc geo.Location, other geo.Other) uint32 {
	loc.Bits = 0
	if e.lastID != noVal && e.last.loc == loc && e.last.other == other {
		return e.lastID
	}
	var flags uint8
	if loc.HasCoords {
		flags |= flagCoords
	}
	if loc.ProvinceCoords {
		flags |= flagProvinceCoords
	}
	p := tplace{lat: loc.Lat, lon: loc.Lon, country: e.str(loc.Country), continent: e.str(loc.Continent),
		province: e.str(loc.Province), city: e.str(loc.City), radius: loc.Radius, spread: loc.SpreadBits,
		source: loc.Source, flags: flags}
	pid, ok := e.places.get(p, e.d.places)
	if !ok {
		pid = uint32(len(e.d.places))
		e.d.places = append(e.d.places, p)
		e.places.put(p, pid)
	}
	c := tcarrier{isp: e.str(loc.ISP), asn: loc.ASN, source: loc.Source}
	cid, ok := e.carriers[c]
	if !ok {
		cid = uint32(len(e.d.carriers))
		e.d.carriers = append(e.d.carriers, c)
		e.carriers[c] = cid
	}
	v := tval{pid, cid, e.other(other)}
	id, ok := e.vals[v]
	if !ok {
		if len(e.d.vals) >= maxVals {
			return noVal
		}
		id = uint32(len(e.d.vals))
		e.d.vals = append(e.d.vals, v)
		e.vals[v] = id
	}
	e.last, e.lastID = memoValue{loc, other}, id
	return id
}

// hashIndex finds a record's id by a hash of it, a third of a map by the
// record itself when the record is large; the rare collision goes to a
// map by the record.
type hashIndex[K comparable] struct {
	seed maphash.Seed
	ids  map[uint64]uint32
	coll map[K]uint32
}

func newHashIndex[K comparable]() hashIndex[K] {
	return hashIndex[K]{seed: maphash.MakeSeed(), ids: map[uint64]uint32{}, coll: map[K]uint32{}}
}

// get is k's id, its records being all.
func (x *hashIndex[K]) get(k K, all []K) (uint32, bool) {
	if id, ok := x.ids[maphash.Comparable(x.seed, k)]; ok && all[id] == k {
		return id, true
	}
	id, ok := x.coll[k]
	return id, ok
}

// put indexes k, which get did not find, as id.
func (x *hashIndex[K]) put(k K, id uint32) {
	h := maphash.Comparable(x.seed, k)
	if _, taken := x.ids[h]; taken {
		x.coll[k] = id
		return
	}
	x.ids[h] = id
}

// size is what the table takes so far.
func (e *encoder) size() int64 {
	d := e.d
	return dirBytes + int64(len(d.lo))*rangeBytes + int64(len(d.vals))*valBytes + int64(len(d.places))*placeBytes +
		int64(len(d.carriers))*carrierBytes + int64(len(d.others))*otherBytes + e.strsBytes
}

// tableBuild is a table being walked.
type tableBuild struct {
	e     *encoder
	nextH int // the first /16 whose ranges did not start yet
	dir   []uint32
}

// add appends the range from a with word w (id<<8 | Bits), joined to the
// last one when they agree and a starts no /16.
func (b *tableBuild) add(a, w uint32) {
	d := b.e.d
	if n := len(d.val); n > 0 && d.val[n-1] == w && a&0xffff != 0 {
		return
	}
	for ; b.nextH <= int(a>>16); b.nextH++ {
		b.dir[b.nextH] = uint32(len(d.lo))
	}
	d.lo, d.val = append(d.lo, uint16(a)), append(d.val, w)
}

// buildTable walks IPv4 through db within cfg's budget, stopping early
// when stop closes. The part walked when the budget runs out is kept: the
// rest goes the way of a table-less lookup, and the table's past says why.
func buildTable(db *geo.DB, cfg PrecomputeConfig, stop <-chan struct{}) *netTable {
	deadline := time.Now().Add(cfg.MaxTime)
	b := &tableBuild{e: newEncoder(), dir: offheap.Make[uint32](1<<16 + 1)}
	walk := geo.NewWalk()
	var a uint64
	past := ""
	for steps := 0; a < 1<<32; steps++ {
		if steps&1023 == 1023 {
			select {
			case <-stop:
				offheap.Free(b.dir)
				return nil
			default:
			}
			if time.Now().After(deadline) {
				past = "time"
				break
			}
		}
		if b.e.size() > cfg.MaxBytes {
			past = "size"
			break
		}
		var raw [4]byte
		binary.BigEndian.PutUint32(raw[:], uint32(a))
		addr := netip.AddrFrom4(raw)
		n, w := KeyBits4, noVal
		if bits, ok := geo.Special(addr); ok {
			n = bits
		} else if loc, other, nb := db.CompareNetWalk(addr, walk); nb <= 32 {
			id := b.e.id(loc, other)
			if id == noVal {
				past = "size"
				break
			}
			n, w = int(nb), id<<8|uint32(loc.Bits)
		}
		size := uint64(1) << (32 - n)
		next := a&^(size-1) + size
		// A network wider than a /16 starts a range in each.
		for s := a; s < next; s = s&^0xffff + 0x10000 {
			b.add(uint32(s), w)
		}
		a = next
	}
	if a < 1<<32 {
		b.add(uint32(a), noVal)
	}
	d := b.e.d
	for ; b.nextH <= 1<<16; b.nextH++ {
		b.dir[b.nextH] = uint32(len(d.lo))
	}
	d.bytes = b.e.size()
	// Off the heap; the walk's heap copies go with the encoder.
	d.dir = b.dir
	d.lo, d.val = offheap.Clone(d.lo), offheap.Clone(d.val)
	d.vals, d.places, d.carriers = offheap.Clone(d.vals), offheap.Clone(d.places), offheap.Clone(d.carriers)
	b.e.done()
	d.others = slices.Clip(d.others)
	offheap.Tie(d, d.dir)
	offheap.Tie(d, d.lo)
	offheap.Tie(d, d.val)
	offheap.Tie(d, d.vals)
	offheap.Tie(d, d.places)
	offheap.Tie(d, d.carriers)
	return &netTable{db: db, d: d, end: a, past: past}
}

// netTable is what the databases say of every IPv4 network, walked once
// at load time, so that a query for a /24 never seen is a lookup without a
// lock. Its ranges are the databases' networks (CompareNet's), adjacent
// ones with the same answer joined, and split at every /16 so that a
// lookup searches only its /16's ranges. Immutable.
type netTable struct {
	db *geo.DB
	d  *tableData
	// norm are the carriers' names through carriers, ids into names, for
	// a chain that applies nothing after the databases; nil: the chain
	// normalizes. Ids, not strings: no pointer per carrier to scan.
	norm     []uint32
	names    strTab
	carriers *geo.Carriers
	end      uint64 // the first address not walked; 1<<32: none
	past     string // what stopped the walk before the end: "size", "time"
	placed   *placed
}

// bytes is the table's size.
func (t *netTable) bytes() int64 { return t.d.bytes }

// normalized is t with its carriers' names through c; t itself when they are.
func (t *netTable) normalized(c *geo.Carriers) *netTable {
	if t.carriers == c && t.norm != nil {
		return t
	}
	n := *t
	n.carriers = c
	n.norm = make([]uint32, len(t.d.carriers))
	var names strSet
	for i, k := range t.d.carriers {
		loc := geo.Location{ISP: t.d.strs.at(k.isp), ASN: k.asn, Source: k.source}
		c.Apply(&loc)
		n.norm[i], _ = names.id(loc.ISP)
	}
	n.names = names.pack()
	n.placed = &placed{}
	return &n
}

// normISP is carrier's name through t's carriers; t.norm is not nil.
func (t *netTable) normISP(carrier uint32) string { return t.names.at(t.norm[carrier]) }

// MaxPlaced bounds Placed: the clients of the most addresses, 40 bytes
// each (GeoLite2-City with ASN has 589,925 in all).
const MaxPlaced = 1 << 17

// placed are the distinct clients of a normalized table, by weight;
// built on the first call of Placed.
type placed struct {
	once   sync.Once
	places *Places
}

// Places are the distinct clients of a table, by what a decision reads of
// a location (policy.ClientOf's fields), from the most addresses to the
// fewest. The records hold no pointer: the collector, which marks on the
// query's CPU, does not scan them.
type Places struct {
	strs strTab   // the table's strings
	isps []string // the normalized carriers, each once
	recs []placeRec
}

type placeRec struct {
	lat, lon                          float64
	country, continent, province, isp uint32
	flags                             uint8
}

// Len is how many clients p holds; 0 for nil.
func (p *Places) Len() int {
	if p == nil {
		return 0
	}
	return len(p.recs)
}

// At is the i-th client's location, reduced to what a decision reads: no
// allocation, the strings are the table's.
func (p *Places) At(i int) geo.Location {
	r := &p.recs[i]
	return geo.Location{Country: p.strs.at(r.country), Continent: p.strs.at(r.continent), Province: p.strs.at(r.province),
		ISP: p.isps[r.isp], HasCoords: r.flags&flagCoords != 0, Lat: r.lat, Lon: r.lon,
		ProvinceCoords: r.flags&flagProvinceCoords != 0}
}

// placedTop is t's values' locations, reduced to what a decision reads
// and each once, the n of the most addresses in that order.
func placedTop(t *netTable, n int) *Places {
	d := t.d
	weight := make([]uint64, len(d.vals))
	for h := range 1 << 16 {
		for i := d.dir[h]; i < d.dir[h+1]; i++ {
			w := d.val[i]
			if w == noVal {
				continue
			}
			end := uint64(h+1) << 16
			if i+1 < d.dir[h+1] {
				end = uint64(h)<<16 | uint64(d.lo[i+1])
			}
			weight[w>>8] += end - (uint64(h)<<16 | uint64(d.lo[i]))
		}
	}
	// Carriers that normalize alike are one client's.
	out := &Places{strs: d.strs}
	ispOf := make([]uint32, len(t.norm))
	ispIDs := map[string]uint32{}
	for i := range t.norm {
		name := t.normISP(uint32(i))
		id, ok := ispIDs[name]
		if !ok {
			id = uint32(len(out.isps))
			ispIDs[name] = id
			out.isps = append(out.isps, name)
		}
		ispOf[i] = id
	}
	ids := map[placeRec]uint32{}
	var keys []placeRec
	var cw []uint64
	for v, tv := range d.vals {
		pl := &d.places[tv.place]
		k := placeRec{lat: pl.lat, lon: pl.lon, country: pl.country, continent: pl.continent, province: pl.province,
			flags: pl.flags & (flagCoords | flagProvinceCoords), isp: ispOf[tv.carrier]}
		id, ok := ids[k]
		if !ok {
			id = uint32(len(keys))
			ids[k] = id
			keys = append(keys, k)
			cw = append(cw, 0)
		}
		cw[id] += weight[v]
	}
	byWeight := make([]uint32, len(keys))
	for i := range byWeight {
		byWeight[i] = uint32(i)
	}
	slices.SortStableFunc(byWeight, func(a, b uint32) int { return cmp.Compare(cw[b], cw[a]) })
	byWeight = byWeight[:min(n, len(byWeight))]
	out.recs = make([]placeRec, len(byWeight))
	for i, id := range byWeight {
		out.recs[i] = keys[id]
	}
	return out
}
