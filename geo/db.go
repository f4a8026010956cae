package geo

import (
	"errors"
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
	"unique"
)

// Metadata describes an opened database, for logs and metrics.
type Metadata struct {
	Kind         string // city, asn, ipdb or ip2region
	Path         string
	DatabaseType string // e.g. "GeoLite2-City"; "ipdb"; "ip2region-v4", "ip2region-v6"
	BuildEpoch   uint64 // seconds since the Unix epoch
}

// DB locates addresses with the local databases, one layer per rank of
// their Formats: MaxMind's City (or Country) and ASN databases are the
// base, and the Chinese databases above it are the authorities for the
// province, city and carrier of the addresses they place in China, the
// IPIP.net database over ip2region: ip2region decides only where the
// IPIP.net database has no answer (or no province) for China. So adding
// ip2region to a deployment with an IPIP.net database changes nothing the
// latter already decides, and the commercial database with per-network
// edits wins over the free one that is rebuilt less often. It is safe for
// concurrent use.
type DB struct {
	layers []ranked // by rank, lowest first
	meta   []Metadata
	digest uint64
}

// ranked is a layer and the format of its rank that names it.
type ranked struct {
	f *Format
	l layer
}

// digestSeed makes Digest comparable within the process, which is all a
// process-local cache needs.
var digestSeed = maphash.MakeSeed()

// Open opens a MaxMind City or Country database (GeoIP2/GeoLite2 or any mmdb
// with that schema) and an optional ASN (GeoLite2-ASN) or ISP (GeoIP2-ISP)
// database (asnPath may be ""). Errors name the file.
func Open(cityPath, asnPath string) (*DB, error) {
	f := Files{"city": {cityPath}}
	if asnPath != "" {
		f["asn"] = []string{asnPath}
	}
	return OpenFiles(f)
}

// FileError is a database that failed to open; Kind (a Format's) says
// which, for the caller to point at its option.
type FileError struct {
	Kind string
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// OpenFiles opens the databases f names. Errors name the file; they are
// *FileError.
func OpenFiles(f Files) (*DB, error) {
	if !f.Enough() {
		return nil, errors.New("geo: no database file given: " + nouns() + " database is required")
	}
	d := &DB{}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	for _, fm := range Formats {
		var paths []string
		for _, p := range f[fm.Kind] {
			if p != "" {
				paths = append(paths, p)
			}
		}
		if len(paths) == 0 {
			continue
		}
		if err := fm.open(d, fm, paths, &h); err != nil {
			return nil, &FileError{fm.Kind, err}
		}
	}
	d.digest = h.Sum64()
	return d, nil
}

// layer is d's layer of f's rank; add makes it when d has none.
func (d *DB) layer(f *Format, add func() layer) layer {
	for _, r := range d.layers {
		if r.f.Rank == f.Rank {
			return r.l
		}
	}
	l := add()
	i := 0
	for i < len(d.layers) && d.layers[i].f.Rank < f.Rank {
		i++
	}
	d.layers = slices.Insert(d.layers, i, ranked{f, l})
	return l
}

// Digest identifies the databases' content: two DBs with the same digest
// locate every address alike.
func (d *DB) Digest() uint64 {
	if d == nil {
		return 0
	}
	return d.digest
}

// Close does nothing: the databases live in memory, and a query that
// loaded this DB before a reload swapped it may still be reading it. The GC
// frees it after the last one.
func (d *DB) Close() error { return nil }

// Info returns the metadata of the open databases.
func (d *DB) Info() []Metadata { return d.meta }

// Lookup locates addr. It never fails: an unknown (or special) address gives a
// zero Location with Bits set to the length of the network that said so.
// ISP is the database's raw organisation name: Carriers.Apply maps it.
func (d *DB) Lookup(addr netip.Addr) Location {
	loc, _ := d.Compare(addr)
	return loc
}

// Other is what MaxMind said of an address a Chinese database (IPIP.net
// or ip2region) placed in China: the two are compared to count their
// disagreements.
type Other struct {
	Province string
	ISP      string // raw
	ASN      uint32
	OK       bool // MaxMind placed the address in China too
}

// Compare locates addr like Lookup, and returns MaxMind's view when the
// IPIP.net database decided.
func (d *DB) Compare(addr netip.Addr) (Location, Other) {
	loc, other, _ := d.CompareNet(addr)
	return loc, other
}

// UnknownNet is CompareNet's length when it knows no network.
const UnknownNet = 255

// CompareNet is Compare, and the length of the network in which every
// database has the record it has for addr: Compare gives every address of
// that network the same answers (wider merged networks, loc.Bits, may
// still differ in the city or the accuracy radius). UnknownNet when a
// database cannot say how far its answer (or its absence) holds, and for
// a special address.
func (d *DB) CompareNet(addr netip.Addr) (Location, Other, uint8) {
	return d.CompareNetWalk(addr, nil)
}

// CompareNetWalk is CompareNet for one of many addresses of a walk: w
// (nil: none) keeps the records decoded, which recur over networks.
func (d *DB) CompareNetWalk(addr netip.Addr, w *Walk) (Location, Other, uint8) {
	addr = addr.Unmap()
	if bits, ok := Special(addr); ok {
		return Location{Special: true, Bits: uint8(bits)}, Other{}, UnknownNet
	}
	var loc, base Location
	var other Other
	var same uint8
	for _, r := range d.layers {
		var b uint8
		if m, ok := r.l.(*mmdb); ok && w != nil {
			loc, b = m.lookupWalk(addr, w)
		} else {
			loc, b = r.l.over(addr, loc)
		}
		same = max(same, b)
		switch {
		case r.f.Rank == 0:
			base = loc
		case loc.Source == r.f.Source && loc.Country == "CN":
			// Compared with the base, not with the layers between.
			other = Other{Province: base.Province, ISP: base.ISP, ASN: base.ASN, OK: base.Country == "CN"}
		}
	}
	return loc, other, same
}

// Said is what the databases of one explain step say of an address on
// their own.
type Said struct {
	Name     string // the Format's Explain
	Location        // the carrier is raw, as Lookup reports it
	Found    bool
}

// Explain is what each database says of addr on its own, in the order of
// Formats: the base's step always, another's when it has the address.
func (d *DB) Explain(addr netip.Addr) []Said {
	addr = addr.Unmap()
	_, special := Special(addr)
	var out []Said
	for _, f := range Formats {
		if slices.ContainsFunc(out, func(s Said) bool { return s.Name == f.Explain }) {
			continue
		}
		var s Said
		if i := slices.IndexFunc(d.layers, func(r ranked) bool { return r.f.Explain == f.Explain }); i >= 0 && !special {
			s.Location, _ = d.layers[i].l.over(addr, Location{})
			s.Found = s.Source == f.Source
		}
		if s.Found || f.Rank == 0 {
			s.Name = f.Explain
			out = append(out, s)
		}
	}
	return out
}

// Decided is the explain step whose format decided loc.
func Decided(loc Location) string {
	for _, f := range Formats {
		if f.Source == loc.Source {
			return f.Explain
		}
	}
	return BaseStep()
}

// BaseStep is the explain step of the base (rank 0), which every
// explanation has.
func BaseStep() string {
	for _, f := range Formats {
		if f.Rank == 0 {
			return f.Explain
		}
	}
	return ""
}

// bothUnits is the spread unit of a location two databases placed, a and
// b each: the finer, and 0 (cut to spread_prefix) when either says so.
func bothUnits(a, b uint8) uint8 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// cnRecord is what a Chinese database says of an address; its strings may
// point into the database.
type cnRecord struct{ cc, country, region, city, isp string }

// mergeCN lets a Chinese database (src) decide the province, city and
// carrier of the addresses it places in China; what was below (mm:
// MaxMind's answer) keeps the ASN, the rest of the world, and the
// coordinates when the provinces agree.
func mergeCN(mm Location, rec cnRecord, bits int, src Source) Location {
	loc := mm
	// Both networks bound the answer: a neighbour inside MaxMind's network
	// may be placed elsewhere by the Chinese database.
	loc.Bits = max(loc.Bits, uint8(bits))
	cc := strings.ToUpper(rec.cc)
	if cc == "" && rec.country == "中国" {
		cc = "CN"
	}
	if cc != "CN" {
		if loc.Country == "" && ContinentOf(cc) != "" {
			loc.Country, loc.Continent, loc.Source = cc, ContinentOf(cc), src
		}
		return loc
	}
	loc.Source = src
	loc.Country, loc.Continent = "CN", "AS"
	// The record's strings point into the database: keep copies.
	if rec.isp != "" {
		loc.ISP = unique.Make(rec.isp).Value()
	}
	prov, ok := provinceFromRegion(rec.region)
	if !ok {
		return loc
	}
	loc.Province = prov
	if city := rec.city; city != "" || mm.Province != prov {
		loc.City = unique.Make(city).Value()
	}
	if mm.Province != prov || !mm.HasCoords {
		lat, lon, _ := ProvinceCapital("CN", prov)
		loc.HasCoords, loc.Lat, loc.Lon, loc.Radius, loc.ProvinceCoords = true, lat, lon, 0, true
	}
	return loc
}
