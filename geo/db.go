package geo

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync"
	"unique"

	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Metadata describes an opened database, for logs and metrics.
type Metadata struct {
	Kind         string // city, asn or ipdb
	Path         string
	DatabaseType string // e.g. "GeoLite2-City"
	BuildEpoch   uint64 // seconds since the Unix epoch
}

// Files names the local databases; any may be "" but City and IPDB not both.
type Files struct {
	City string // MaxMind City or Country
	ASN  string // MaxMind ASN or ISP
	IPDB string // IPIP.net
}

// DB locates addresses with the local databases: a MaxMind City (or
// Country) database, an ASN/ISP database, and an IPIP.net database, which is
// the authority for the province, city and carrier of the addresses it
// places in China. It is safe for concurrent use.
type DB struct {
	city, asn *maxminddb.Reader
	// cityWide, asnWide and ipWide merge each database's adjacent
	// networks that place clients alike.
	cityWide, asnWide, ipWide *wide
	ip                        *ipdb.Reader
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
	if f.City == "" && f.IPDB == "" {
		return nil, errors.New("geo: no database file given: a City or an IPIP.net database is required")
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
	}
	if f.ASN != "" {
		if d.asn, err = d.openReader("asn", f.ASN, &h); err != nil {
			return nil, &FileError{"asn", err}
		}
		d.asnWide = buildWide(d.asn, asnPlace)
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
		d.meta = append(d.meta, Metadata{Kind: "ipdb", Path: f.IPDB, DatabaseType: "ipdb", BuildEpoch: uint64(max(d.ip.Meta().Build, 0))})
	}
	d.digest = h.Sum64()
	return d, nil
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

// Other is what MaxMind said of an address the IPIP.net database placed:
// the two are compared to count their disagreements.
type Other struct {
	Province string
	ISP      string // raw
	ASN      uint32
	OK       bool // MaxMind placed the address in China too
}

// Compare locates addr like Lookup, and returns MaxMind's view when the
// IPIP.net database decided.
func (d *DB) Compare(addr netip.Addr) (Location, Other) {
	addr = addr.Unmap()
	if bits, ok := Special(addr); ok {
		return Location{Special: true, Bits: uint8(bits)}, Other{}
	}
	loc := d.lookupMaxMind(addr)
	if d.ip == nil {
		return loc, Other{}
	}
	return d.mergeIPDB(addr, loc)
}

// Explain is what each database says of addr on its own: MaxMind's City
// and ASN databases together, and the IPIP.net database when there is one
// and it has the address (ok). Carriers are raw, as Lookup reports them.
func (d *DB) Explain(addr netip.Addr) (maxmind, ipip Location, ok bool) {
	addr = addr.Unmap()
	if _, special := Special(addr); special {
		return Location{}, Location{}, false
	}
	maxmind = d.lookupMaxMind(addr)
	if d.ip == nil {
		return maxmind, Location{}, false
	}
	ipip, _ = d.mergeIPDB(addr, Location{})
	return maxmind, ipip, ipip.Source == SourceIPDB
}

func (d *DB) lookupMaxMind(addr netip.Addr) Location {
	var loc Location
	found := false
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	if d.city != nil {
		res := d.city.Lookup(addr)
		loc.Bits = d.cityWide.bits(addr, prefixBits(res, addr))
		if res.Found() {
			s.city = cityRecord{}
			if err := res.Decode(&s.city); err == nil {
				found = loc.fillCity(&s.city) || found
			}
		}
	}
	// The networks of both databases bound the answer, matched or not: outside
	// the ASN network the carrier (or its absence) may differ.
	if d.asn != nil {
		res := d.asn.Lookup(addr)
		loc.Bits = max(loc.Bits, d.asnWide.bits(addr, prefixBits(res, addr)))
		if res.Found() {
			s.asn = asnRecord{}
			if err := res.Decode(&s.asn); err == nil {
				found = loc.fillASN(&s.asn) || found
			}
		}
	}
	if found {
		loc.Source = SourceDB
	}
	return loc
}

// mergeIPDB lets the IPIP.net database decide the province, city and
// carrier of the addresses it places in China; MaxMind keeps the ASN, the
// rest of the world, and the coordinates when the provinces agree.
func (d *DB) mergeIPDB(addr netip.Addr, mm Location) (Location, Other) {
	rec, bits, ok := d.ip.Lookup(addr)
	if !ok {
		return mm, Other{}
	}
	loc := mm
	// Both networks bound the answer: a neighbour inside MaxMind's network
	// may be placed elsewhere by the IPIP.net database.
	loc.Bits = max(loc.Bits, d.ipWide.bits(addr, uint8(bits)))
	cc := strings.ToUpper(rec.CountryCode())
	if cc == "" && rec.CountryName() == "中国" {
		cc = "CN"
	}
	if cc != "CN" {
		if loc.Country == "" && ContinentOf(cc) != "" {
			loc.Country, loc.Continent, loc.Source = cc, ContinentOf(cc), SourceIPDB
		}
		return loc, Other{}
	}
	other := Other{Province: mm.Province, ISP: mm.ISP, ASN: mm.ASN, OK: mm.Country == "CN"}
	loc.Source = SourceIPDB
	loc.Country, loc.Continent = "CN", "AS"
	// The record's strings point into the database: keep copies.
	if isp := rec.ISPDomain(); isp != "" {
		loc.ISP = unique.Make(isp).Value()
	}
	prov, ok := provinceFromRegion(rec.RegionName())
	if !ok {
		return loc, other
	}
	loc.Province = prov
	if city := rec.CityName(); city != "" || mm.Province != prov {
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
