package geo

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync"
	"unique"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Metadata describes an opened database, for logs and metrics.
type Metadata struct {
	Kind         string // city, asn, ipdb or ip2region
	Path         string
	DatabaseType string // e.g. "GeoLite2-City"; "ipdb"; "ip2region-v4", "ip2region-v6"
	BuildEpoch   uint64 // seconds since the Unix epoch
}

// Files names the local databases; any may be "" but not City, IPDB and
// IP2Region all.
type Files struct {
	City string // MaxMind City or Country
	ASN  string // MaxMind ASN or ISP
	IPDB string // IPIP.net
	// IP2Region are up to two ip2region xdb files, in any order: one for
	// IPv4, one for IPv6.
	IP2Region [2]string
}

// HasIP2Region reports whether f names an ip2region file.
func (f Files) HasIP2Region() bool { return f.IP2Region != [2]string{} }

// Paths are the files f names, in a fixed order.
func (f Files) Paths() []string {
	var out []string
	for _, p := range []string{f.City, f.ASN, f.IPDB, f.IP2Region[0], f.IP2Region[1]} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// DB locates addresses with the local databases: a MaxMind City (or
// Country) database, an ASN/ISP database, an IPIP.net database and
// ip2region files. The two Chinese databases are the authorities for the
// province, city and carrier of the addresses they place in China, the
// IPIP.net database over ip2region: ip2region decides only where the
// IPIP.net database has no answer (or no province) for China. So adding
// ip2region to a deployment with an IPIP.net database changes nothing the
// latter already decides, and the commercial database with per-network
// edits wins over the free one that is rebuilt less often. It is safe for
// concurrent use.
type DB struct {
	city, asn *maxminddb.Reader
	// cityWide, asnWide and ipWide merge each database's adjacent
	// networks that place clients alike; ip2region's ranges are merged
	// already.
	cityWide, asnWide, ipWide *wide
	ip                        *ipdb.Reader
	r4, r6                    *ip2region.Reader
	meta                      []Metadata
	digest                    uint64
}

// digestSeed makes Digest comparable within the process, which is all a
// process-local cache needs.
var digestSeed = maphash.MakeSeed()

// Open opens a MaxMind City or Country database (GeoIP2/GeoLite2 or any mmdb
// with that schema) and an optional ASN (GeoLite2-ASN) or ISP (GeoIP2-ISP)
// database (asnPath may be ""). Errors name the file.
func Open(cityPath, asnPath string) (*DB, error) {
	return OpenFiles(Files{City: cityPath, ASN: asnPath})
}

// FileError is a database that failed to open; Kind (city, asn or ipdb)
// says which, for the caller to point at its option.
type FileError struct {
	Kind string
	Err  error
}

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// OpenFiles opens the databases f names. Errors name the file; they are
// *FileError.
func OpenFiles(f Files) (*DB, error) {
	if f.City == "" && f.IPDB == "" && !f.HasIP2Region() {
		return nil, errors.New("geo: no database file given: a City, an IPIP.net or an ip2region database is required")
	}
	d := &DB{}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	var err error
	if f.City != "" {
		if d.city, err = d.openReader("city", f.City, &h); err != nil {
			return nil, &FileError{"city", err}
		}
		d.cityWide = buildWide(d.city, cityPlace)
		d.cityWide.offHeap(d)
	}
	if f.ASN != "" {
		if d.asn, err = d.openReader("asn", f.ASN, &h); err != nil {
			return nil, &FileError{"asn", err}
		}
		d.asnWide = buildWide(d.asn, asnPlace)
		d.asnWide.offHeap(d)
	}
	if f.IPDB != "" {
		b, err := readOffHeap(f.IPDB, d)
		if err != nil {
			return nil, &FileError{"ipdb", fmt.Errorf("geo: %w", err)}
		}
		h.Write(b)
		if d.ip, err = ipdb.FromBytes(f.IPDB, b); err != nil {
			if r, merr := maxminddb.OpenBytes(b); merr == nil {
				err = fmt.Errorf("%s is a MaxMind database of type %q, not an IPIP.net database%s",
					f.IPDB, r.Metadata.DatabaseType, optionHint(mmdbKind(r.Metadata.DatabaseType)))
			}
			return nil, &FileError{"ipdb", fmt.Errorf("geo: %w", err)}
		}
		d.ipWide = buildWideIPDB(d.ip)
		d.ipWide.offHeap(d)
		d.meta = append(d.meta, Metadata{Kind: "ipdb", Path: f.IPDB, DatabaseType: "ipdb", BuildEpoch: uint64(max(d.ip.Meta().Build, 0))})
	}
	for _, p := range f.IP2Region {
		if p == "" {
			continue
		}
		if err := d.openIP2Region(p, &h); err != nil {
			return nil, &FileError{"ip2region", fmt.Errorf("geo: %w", err)}
		}
	}
	d.digest = h.Sum64()
	return d, nil
}

// openIP2Region opens an xdb file into the slot of its family.
func (d *DB) openIP2Region(path string, h *maphash.Hash) error {
	b, err := readOffHeap(path, d)
	if err != nil {
		return err
	}
	h.Write(b)
	r, err := ip2region.FromBytes(path, b)
	if err != nil {
		if _, merr := maxminddb.OpenBytes(b); merr == nil {
			return fmt.Errorf("%s is a MaxMind database, not an ip2region xdb file", path)
		}
		if _, ierr := ipdb.FromBytes(path, b); ierr == nil {
			return fmt.Errorf("%s is an IPIP.net database, not an ip2region xdb file: give it to ipdb", path)
		}
		return err
	}
	slot := &d.r4
	if r.IPVersion() == 6 {
		slot = &d.r6
	}
	if *slot != nil {
		return fmt.Errorf("%s: a second IPv%d ip2region file: give one IPv4 and one IPv6 file", path, r.IPVersion())
	}
	*slot = r
	d.meta = append(d.meta, Metadata{Kind: "ip2region", Path: path, DatabaseType: fmt.Sprintf("ip2region-v%d", r.IPVersion()), BuildEpoch: uint64(r.Created())})
	return nil
}

// Digest identifies the databases' content: two DBs with the same digest
// locate every address alike.
func (d *DB) Digest() uint64 {
	if d == nil {
		return 0
	}
	return d.digest
}

// openReader reads a MaxMind database into memory that d owns: a reload
// can then drop the old database while queries still read it, and its
// memory goes once the last of them is done.
func (d *DB) openReader(kind, path string, h *maphash.Hash) (*maxminddb.Reader, error) {
	b, err := readOffHeap(path, d)
	if err != nil {
		return nil, fmt.Errorf("geo: %w", err)
	}
	h.Write(b)
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		if _, ierr := ipdb.FromBytes(path, b); ierr == nil {
			return nil, fmt.Errorf("geo: %s is an IPIP.net database, not a MaxMind %s database: give it to ipdb", path, kindName[kind])
		}
		return nil, fmt.Errorf("geo: open %s: %w", path, err)
	}
	if err := checkType(kind, path, r.Metadata.DatabaseType); err != nil {
		return nil, err
	}
	d.meta = append(d.meta, Metadata{Kind: kind, Path: path, DatabaseType: r.Metadata.DatabaseType, BuildEpoch: uint64(r.Metadata.BuildEpoch)})
	return r, nil
}

var kindName = map[string]string{"city": "City or Country", "asn": "ASN or ISP"}

// mmdbKind is the kind of database a MaxMind type names: "city", "asn",
// "other" for one that has neither (Anonymous-IP, Connection-Type,
// Domain), "" for a type it does not know, which may have either schema.
func mmdbKind(dbType string) string {
	t := strings.ToLower(dbType)
	switch {
	case strings.Contains(t, "city"), strings.Contains(t, "country"), strings.Contains(t, "enterprise"):
		return "city"
	case strings.Contains(t, "asn"), strings.Contains(t, "isp"):
		return "asn"
	case strings.Contains(t, "anonymous"), strings.Contains(t, "connection"), strings.Contains(t, "domain"),
		strings.Contains(t, "user-count"), strings.Contains(t, "density"):
		return "other"
	}
	return ""
}

// checkType refuses a database whose metadata says it is not of kind: a
// swapped City and ASN database opens fine and places every client nowhere.
func checkType(kind, path, dbType string) error {
	k := mmdbKind(dbType)
	if k == "" || k == kind {
		return nil
	}
	return fmt.Errorf("geo: %s is a database of type %q, not a MaxMind %s database%s", path, dbType, kindName[kind], optionHint(k))
}

// optionHint names the Corefile option that takes a database of kind k.
func optionHint(k string) string {
	switch k {
	case "city":
		return ": give it to geoip"
	case "asn":
		return ": give it to asn"
	}
	return ""
}

// Close does nothing: the databases live in memory, and a query that
// loaded this DB before a reload swapped it may still be reading it. The GC
// frees it after the last one.
func (d *DB) Close() error { return nil }

// Info returns the metadata of the open databases.
func (d *DB) Info() []Metadata { return d.meta }

// scratch keeps decoded records off the heap: Decode takes an interface,
// so a record on Lookup's stack would escape on every call.
type scratch struct {
	city cityRecord
	asn  asnRecord
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

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
	addr = addr.Unmap()
	if bits, ok := Special(addr); ok {
		return Location{Special: true, Bits: uint8(bits)}, Other{}, UnknownNet
	}
	mm, same := d.lookupMaxMind(addr)
	loc := mm
	var other Other
	if d.r4 != nil || d.r6 != nil {
		var b uint8
		loc, other, b = d.mergeIP2Region(addr, loc)
		same = max(same, b)
	}
	if d.ip != nil {
		var b uint8
		if loc, _, b = d.mergeIPDB(addr, loc); loc.Source == SourceIPDB && loc.Country == "CN" {
			// Compared with MaxMind, not with ip2region below it.
			other = Other{Province: mm.Province, ISP: mm.ISP, ASN: mm.ASN, OK: mm.Country == "CN"}
		}
		same = max(same, b)
	}
	return loc, other, same
}

// ExplainIP2Region is what the ip2region files say of addr on their own,
// when they have it (ok). The carrier is raw.
func (d *DB) ExplainIP2Region(addr netip.Addr) (loc Location, ok bool) {
	addr = addr.Unmap()
	if _, special := Special(addr); special || d.r4 == nil && d.r6 == nil {
		return Location{}, false
	}
	loc, _, _ = d.mergeIP2Region(addr, Location{})
	return loc, loc.Source == SourceIP2Region
}

// Explain is what each database says of addr on its own: MaxMind's City
// and ASN databases together, and the IPIP.net database when there is one
// and it has the address (ok). Carriers are raw, as Lookup reports them.
func (d *DB) Explain(addr netip.Addr) (maxmind, ipip Location, ok bool) {
	addr = addr.Unmap()
	if _, special := Special(addr); special {
		return Location{}, Location{}, false
	}
	maxmind, _ = d.lookupMaxMind(addr)
	if d.ip == nil {
		return maxmind, Location{}, false
	}
	ipip, _, _ = d.mergeIPDB(addr, Location{})
	return maxmind, ipip, ipip.Source == SourceIPDB
}

// lookupMaxMind also returns the length of the network in which both
// databases have the records they have for addr.
func (d *DB) lookupMaxMind(addr netip.Addr) (Location, uint8) {
	var loc Location
	var same uint8
	found := false
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	if d.city != nil {
		res := d.city.Lookup(addr)
		same = netBits(res, addr)
		loc.Bits = d.cityWide.bits(addr, prefixBits(res, addr))
		if res.Found() {
			s.city = cityRecord{}
			if err := res.Decode(&s.city); err == nil {
				if loc.fillCity(&s.city) {
					found = true
					loc.SpreadBits = d.cityWide.unitBits(placeKey(&loc))
				}
			}
		}
	}
	// The networks of both databases bound the answer, matched or not: outside
	// the ASN network the carrier (or its absence) may differ.
	if d.asn != nil {
		spread := uint8(0) // an address the ASN database has no record for
		res := d.asn.Lookup(addr)
		same = max(same, netBits(res, addr))
		loc.Bits = max(loc.Bits, d.asnWide.bits(addr, prefixBits(res, addr)))
		if res.Found() {
			s.asn = asnRecord{}
			if err := res.Decode(&s.asn); err == nil {
				var a Location
				if a.fillASN(&s.asn) {
					found = true
					loc.ASN, loc.ISP = a.ASN, a.ISP
					u := d.asnWide.unitBits(placeKey(&a))
					if d.city != nil {
						u = bothUnits(loc.SpreadBits, u)
					}
					spread = u
				}
			}
		}
		loc.SpreadBits = spread
	}
	if found {
		loc.Source = SourceDB
	}
	return loc, same
}

// mergeIPDB lets the IPIP.net database decide the addresses it places in
// China, see mergeCN.
// The length is that of the database's own network.
func (d *DB) mergeIPDB(addr netip.Addr, mm Location) (Location, Other, uint8) {
	rec, bits, ok := d.ip.Lookup(addr)
	if !ok {
		return mm, Other{}, UnknownNet // how far the absence holds is not known
	}
	loc, other := mergeCN(mm, cnRecord{rec.CountryCode(), rec.CountryName(), rec.RegionName(), rec.CityName(), rec.ISPDomain()}, int(d.ipWide.bits(addr, uint8(bits))), SourceIPDB)
	u := d.ipWide.unitBits(ipdbPlace(rec))
	if mm.Source != SourceNone {
		u = bothUnits(mm.SpreadBits, u)
	}
	loc.SpreadBits = u
	return loc, other, uint8(bits)
}

// bothUnits is the spread unit of a location two databases placed, a and
// b each: the finer, and 0 (cut to spread_prefix) when either says so.
func bothUnits(a, b uint8) uint8 {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// ipdbPlace is an IPIP.net record's place: the country, the province and
// the carrier that mergeIPDB reads.
func ipdbPlace(rec ipdb.Record) place {
	cc := strings.ToUpper(rec.CountryCode())
	if cc == "" && rec.CountryName() == "中国" {
		cc = "CN"
	}
	if cc != "CN" {
		return place{country: cc}
	}
	prov, _ := provinceFromRegion(rec.RegionName())
	return place{country: cc, province: prov, isp: rec.ISPDomain()}
}

// mergeIP2Region lets the ip2region file of addr's family decide the
// addresses it places in China, see mergeCN.
// The length is that of the file's range.
func (d *DB) mergeIP2Region(addr netip.Addr, mm Location) (Location, Other, uint8) {
	r := d.r6
	if addr.Is4() {
		r = d.r4
	}
	if r == nil {
		return mm, Other{}, 0
	}
	rec, bits, ok := r.Lookup(addr)
	if !ok {
		return mm, Other{}, UnknownNet
	}
	loc, other := mergeCN(mm, cnRecord{rec.ISO2, rec.Country, rec.Province, rec.City, rec.ISP}, bits, SourceIP2Region)
	// ip2region's places are not measured: cut to spread_prefix.
	loc.SpreadBits = 0
	return loc, other, uint8(bits)
}

// cnRecord is what a Chinese database says of an address; its strings may
// point into the database.
type cnRecord struct{ cc, country, region, city, isp string }

// mergeCN lets a Chinese database (src) decide the province, city and
// carrier of the addresses it places in China; what was below (mm:
// MaxMind's answer) keeps the ASN, the rest of the world, and the
// coordinates when the provinces agree.
func mergeCN(mm Location, rec cnRecord, bits int, src Source) (Location, Other) {
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
		return loc, Other{}
	}
	other := Other{Province: mm.Province, ISP: mm.ISP, ASN: mm.ASN, OK: mm.Country == "CN"}
	loc.Source = src
	loc.Country, loc.Continent = "CN", "AS"
	// The record's strings point into the database: keep copies.
	if rec.isp != "" {
		loc.ISP = unique.Make(rec.isp).Value()
	}
	prov, ok := provinceFromRegion(rec.region)
	if !ok {
		return loc, other
	}
	loc.Province = prov
	if city := rec.city; city != "" || mm.Province != prov {
		loc.City = unique.Make(city).Value()
	}
	if mm.Province != prov || !mm.HasCoords {
		lat, lon, _ := ProvinceCapital("CN", prov)
		loc.HasCoords, loc.Lat, loc.Lon, loc.Radius, loc.ProvinceCoords = true, lat, lon, 0, true
	}
	return loc, other
}

// prefixBits is the length of the network the lookup landed in, in addr's
// own family (the reader already strips the ::/96 of IPv4 in IPv6 trees).
func prefixBits(res maxminddb.Result, addr netip.Addr) uint8 {
	if res.Err() != nil {
		return 0
	}
	b := res.Prefix().Bits()
	if b < 0 {
		return 0
	}
	return uint8(min(b, addr.BitLen()))
}

// netBits is prefixBits, UnknownNet when the lookup failed.
func netBits(res maxminddb.Result, addr netip.Addr) uint8 {
	if res.Err() != nil || res.Prefix().Bits() < 0 {
		return UnknownNet
	}
	return prefixBits(res, addr)
}

func (l *Location) fillCity(r *cityRecord) bool {
	country := r.country
	if country == "" {
		country = r.registered
	}
	if country == "" {
		return false
	}
	l.Country = country
	l.Continent = r.continent
	if l.Continent == "" {
		l.Continent = ContinentOf(country)
	}
	if r.province != "" {
		l.Province, _ = NormalizeProvince(country, r.province)
	}
	l.City = r.city
	if (l.Province != "" || l.City != "") && r.hasLat && r.hasLon {
		l.HasCoords, l.Lat, l.Lon, l.Radius = true, r.lat, r.lon, r.radius
	}
	return true
}

func (l *Location) fillASN(r *asnRecord) bool {
	org := r.isp
	if org == "" {
		org = r.org
	}
	if org == "" {
		org = r.asOrg
	}
	if r.asn == 0 && org == "" {
		return false
	}
	l.ASN = r.asn
	l.ISP = org
	return true
}
