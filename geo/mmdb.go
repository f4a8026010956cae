package geo

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync"

	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// The base format: MaxMind's City (or Country) and ASN (or ISP)
// databases, one layer that answers as one explain step.

// mmdb is the base layer; either database may be missing.
type mmdb struct {
	city, asn *maxminddb.Reader
	// cityWide and asnWide merge each database's adjacent networks that
	// place clients alike.
	cityWide, asnWide *wide
}

func mmdbOf(d *DB, f *Format) *mmdb {
	return d.layer(f, func() layer { return &mmdb{} }).(*mmdb)
}

// openCity and openASN open the two MaxMind formats into their slots.
var (
	openCity = openMMDB(func(m *mmdb) (**maxminddb.Reader, **wide) { return &m.city, &m.cityWide }, cityPlace)
	openASN  = openMMDB(func(m *mmdb) (**maxminddb.Reader, **wide) { return &m.asn, &m.asnWide }, asnPlace)
)

// openMMDB is the open function of a MaxMind format whose reader and wide
// runs go to the slots of the base layer.
func openMMDB(slots func(*mmdb) (**maxminddb.Reader, **wide), placeOf func(maxminddb.Result) (place, bool)) func(*DB, *Format, []string, *maphash.Hash) error {
	return func(d *DB, f *Format, paths []string, h *maphash.Hash) error {
		r, w := slots(mmdbOf(d, f))
		var err error
		if *r, err = d.openReader(f.Kind, paths[0], h); err != nil {
			return err
		}
		*w = buildWide(*r, placeOf)
		(*w).offHeap(d)
		return nil
	}
}

// over ignores what is below: nothing is.
func (m *mmdb) over(addr netip.Addr, _ Location) (Location, uint8) { return m.lookup(addr) }

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
			return nil, fmt.Errorf("geo: %s is an IPIP.net database, not a MaxMind %s database: %s", path, kindName[kind], giveTo("ipdb"))
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
	return fmt.Errorf("geo: %s is a database of type %q, not a MaxMind %s database%s", path, dbType, kindName[kind], mmdbHint(k))
}

// scratch keeps decoded records off the heap: Decode takes an interface,
// so a record on Lookup's stack would escape on every call.
type scratch struct {
	city cityRecord
	asn  asnRecord
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// lookup is what the MaxMind databases say of addr, and the length of the network in which both
// databases have the records they have for addr.
func (m *mmdb) lookup(addr netip.Addr) (Location, uint8) { return m.lookupWalk(addr, nil) }

// lookupWalk is lookup; with w, each record is decoded once per walk.
func (m *mmdb) lookupWalk(addr netip.Addr, w *Walk) (Location, uint8) {
	var loc Location
	var same uint8
	found := false
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	cities, asns := w.memos()

	if m.city != nil {
		res := m.city.Lookup(addr)
		same = netBits(res, addr)
		bits := m.cityWide.bits(addr, prefixBits(res, addr))
		if res.Found() {
			if c, ok := cities.get(res.Offset()); ok {
				loc, found = c.loc, c.found
			} else {
				s.city = cityRecord{}
				if err := res.Decode(&s.city); err == nil {
					if loc.fillCity(&s.city) {
						found = true
						loc.SpreadBits = m.cityWide.unitBits(placeKey(&loc))
					}
				}
				cities.put(res.Offset(), walked{loc, found})
			}
		}
		loc.Bits = bits
	}
	// The networks of both databases bound the answer, matched or not: outside
	// the ASN network the carrier (or its absence) may differ.
	if m.asn != nil {
		spread := uint8(0) // an address the ASN database has no record for
		res := m.asn.Lookup(addr)
		same = max(same, netBits(res, addr))
		loc.Bits = max(loc.Bits, m.asnWide.bits(addr, prefixBits(res, addr)))
		if res.Found() {
			a, ok := asns.get(res.Offset())
			if !ok {
				s.asn = asnRecord{}
				if err := res.Decode(&s.asn); err == nil {
					a.found = a.loc.fillASN(&s.asn)
					if a.found {
						a.loc.SpreadBits = m.asnWide.unitBits(placeKey(&a.loc))
					}
				}
				asns.put(res.Offset(), a)
			}
			if a.found {
				found = true
				loc.ASN, loc.ISP = a.loc.ASN, a.loc.ISP
				u := a.loc.SpreadBits
				if m.city != nil {
					u = bothUnits(loc.SpreadBits, u)
				}
				spread = u
			}
		}
		loc.SpreadBits = spread
	}
	if found {
		loc.Source = SourceDB
	}
	return loc, same
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

// mmdbHint names the option of a MaxMind database of kind k: "other"
// and unknown types have none.
func mmdbHint(k string) string {
	if k == "city" || k == "asn" {
		return giveTo(k)
	}
	return ""
}
