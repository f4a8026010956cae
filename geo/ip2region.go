package geo

import (
	"fmt"
	"hash/maphash"
	"net/netip"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// The ip2region format: up to two xdb files, one per family, over the
// base and under the IPIP.net database.

type ip2regionLayer struct{ r4, r6 *ip2region.Reader }

func openIP2Region(d *DB, f *Format, paths []string, h *maphash.Hash) error {
	l := d.layer(f, func() layer { return &ip2regionLayer{} }).(*ip2regionLayer)
	for _, p := range paths {
		if err := l.open(d, f, p, h); err != nil {
			return fmt.Errorf("geo: %w", err)
		}
	}
	return nil
}

// open opens an xdb file into the slot of its family.
func (l *ip2regionLayer) open(d *DB, f *Format, path string, h *maphash.Hash) error {
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
			return fmt.Errorf("%s is an IPIP.net database, not an ip2region xdb file%s", path, giveTo("ipdb"))
		}
		return err
	}
	slot := &l.r4
	if r.IPVersion() == 6 {
		slot = &l.r6
	}
	if *slot != nil {
		return fmt.Errorf("%s: a second IPv%d ip2region file: give one IPv4 and one IPv6 file", path, r.IPVersion())
	}
	*slot = r
	d.meta = append(d.meta, Metadata{Kind: f.Kind, Path: path, DatabaseType: fmt.Sprintf("ip2region-v%d", r.IPVersion()), BuildEpoch: uint64(r.Created())})
	return nil
}

// over lets the ip2region file of addr's family decide the
// addresses it places in China, see mergeCN.
// The length is that of the file's range.
func (l *ip2regionLayer) over(addr netip.Addr, mm Location) (Location, uint8) {
	r := l.r6
	if addr.Is4() {
		r = l.r4
	}
	if r == nil {
		return mm, 0
	}
	rec, bits, ok := r.Lookup(addr)
	if !ok {
		return mm, UnknownNet
	}
	loc := mergeCN(mm, cnRecord{rec.ISO2, rec.Country, rec.Province, rec.City, rec.ISP}, bits, SourceIP2Region)
	// ip2region's places are not measured: cut to spread_prefix.
	loc.SpreadBits = 0
	return loc, uint8(bits)
}
