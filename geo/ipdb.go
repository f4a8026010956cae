package geo

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"

	"github.com/gslbdns/gslb/geo/ipdb"

	"github.com/oschwald/maxminddb-golang/v2"
)

// The IPIP.net format: one ipdb file, over ip2region.

type ipdbLayer struct {
	r *ipdb.Reader
	// wide merges the database's adjacent networks that place clients
	// alike.
	wide *wide
}

func openIPDB(d *DB, f *Format, paths []string, h *maphash.Hash) error {
	path := paths[0]
	b, err := readOffHeap(path, d)
	if err != nil {
		return fmt.Errorf("geo: %w", err)
	}
	h.Write(b)
	r, err := ipdb.FromBytes(path, b)
	if err != nil {
		if m, merr := maxminddb.OpenBytes(b); merr == nil {
			err = fmt.Errorf("%s is a MaxMind database of type %q, not an IPIP.net database%s",
				path, m.Metadata.DatabaseType, mmdbHint(mmdbKind(m.Metadata.DatabaseType)))
		}
		return fmt.Errorf("geo: %w", err)
	}
	l := &ipdbLayer{r: r, wide: buildWideIPDB(r)}
	l.wide.offHeap(d)
	d.layer(f, func() layer { return l })
	d.meta = append(d.meta, Metadata{Kind: f.Kind, Path: path, DatabaseType: "ipdb", BuildEpoch: uint64(max(r.Meta().Build, 0))})
	return nil
}

// over lets the IPIP.net database decide the addresses it places in
// China, see mergeCN.
// The length is that of the database's own network.
func (l *ipdbLayer) over(addr netip.Addr, mm Location) (Location, uint8) {
	rec, bits, ok := l.r.Lookup(addr)
	if !ok {
		return mm, UnknownNet // how far the absence holds is not known
	}
	loc := mergeCN(mm, cnRecord{rec.CountryCode(), rec.CountryName(), rec.RegionName(), rec.CityName(), rec.ISPDomain()}, int(l.wide.bits(addr, uint8(bits))), SourceIPDB)
	u := l.wide.unitBits(ipdbPlace(rec))
	if mm.Source != SourceNone {
		u = bothUnits(mm.SpreadBits, u)
	}
	loc.SpreadBits = u
	return loc, uint8(bits)
}

// ipdbPlace is an IPIP.net record's place: the country, the province and
// the carrier that over reads.
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
