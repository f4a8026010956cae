package geo

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"os"
	"sync"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Metadata describes an opened database, for logs and metrics.
type Metadata struct {
	Path         string
	DatabaseType string // e.g. "GeoLite2-City"
	BuildEpoch   uint64 // seconds since the Unix epoch
}

// DB locates addresses with a City (or Country) database and an optional
// ASN/ISP database. It is safe for concurrent use.
type DB struct {
	city, asn         *maxminddb.Reader
	cityMeta, asnMeta Metadata
	digest            uint64
}

// digestSeed makes Digest comparable within the process, which is all a
// process-local cache needs.
var digestSeed = maphash.MakeSeed()

// Open opens a MaxMind City or Country database (GeoIP2/GeoLite2 or any mmdb
// with that schema) and an optional ASN (GeoLite2-ASN) or ISP (GeoIP2-ISP)
// database (asnPath may be ""). Errors name the file.
func Open(cityPath, asnPath string) (*DB, error) {
	d := &DB{}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	var err error
	if d.city, d.cityMeta, err = openReader(cityPath, &h); err != nil {
		return nil, err
	}
	if asnPath != "" {
		if d.asn, d.asnMeta, err = openReader(asnPath, &h); err != nil {
			d.city.Close()
			return nil, err
		}
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

func openReader(path string, h *maphash.Hash) (*maxminddb.Reader, Metadata, error) {
	if path == "" {
		return nil, Metadata{}, fmt.Errorf("geo: no database file given")
	}
	// Read into memory rather than mmap: a reload can then drop the old
	// database while queries still read it, and the GC frees it after them.
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("geo: %w", err)
	}
	h.Write(b)
	r, err := maxminddb.OpenBytes(b)
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("geo: open %s: %w", path, err)
	}
	return r, Metadata{Path: path, DatabaseType: r.Metadata.DatabaseType, BuildEpoch: uint64(r.Metadata.BuildEpoch)}, nil
}

// Close does nothing: the databases live in memory, and a query that
// loaded this DB before a reload swapped it may still be reading it. The GC
// frees it after the last one.
func (d *DB) Close() error { return nil }

// Info returns the metadata of the City and ASN databases (zero when absent).
func (d *DB) Info() (city, asn Metadata) { return d.cityMeta, d.asnMeta }

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
	addr = addr.Unmap()
	if bits, ok := Special(addr); ok {
		return Location{Special: true, Bits: uint8(bits)}
	}
	var loc Location
	found := false
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	res := d.city.Lookup(addr)
	loc.Bits = prefixBits(res, addr)
	if res.Found() {
		s.city = cityRecord{}
		if err := res.Decode(&s.city); err == nil {
			found = loc.fillCity(&s.city) || found
		}
	}
	// The networks of both databases bound the answer, matched or not: outside
	// the ASN network the carrier (or its absence) may differ.
	if d.asn != nil {
		res := d.asn.Lookup(addr)
		loc.Bits = max(loc.Bits, prefixBits(res, addr))
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
