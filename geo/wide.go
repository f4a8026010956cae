package geo

import (
	"encoding/binary"
	"net/netip"
	"slices"

	"github.com/oschwald/maxminddb-golang/v2"
)

// wide merges adjacent IPv4 networks of a database that place clients
// alike into runs, at load time: an address's network then widens to the
// largest aligned supernet inside its run, and the reply's scope (which a
// resolver caches the answer for) with it. Only runs of two networks or
// more are kept. Immutable.
type wide struct {
	start, end []uint32 // inclusive, sorted, disjoint
}

// place is what of a network's location the decision reads: the city's
// name and the accuracy radius are left out.
type place struct {
	country, continent, province, isp string
	hasCoords                         bool
	lat, lon                          float64
	asn                               uint32
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
	w := &wide{}
	seen := map[uintptr]place{}
	var (
		have       bool
		cur        place
		start, end uint32
		count      int
		n          int
	)
	flush := func() {
		if have && count > 1 {
			w.start, w.end = append(w.start, start), append(w.end, end)
		}
	}
	for res := range r.NetworksWithin(netip.PrefixFrom(netip.IPv4Unspecified(), 0)) {
		if n++; n > maxWideNetworks || res.Err() != nil {
			return &wide{}
		}
		p := res.Prefix()
		if !p.Addr().Is4() {
			continue
		}
		pl, ok := seen[res.Offset()]
		if !ok {
			if pl, ok = placeOf(res); !ok {
				flush()
				have = false
				continue
			}
			seen[res.Offset()] = pl
		}
		a := p.Masked().Addr().As4()
		s := binary.BigEndian.Uint32(a[:])
		e := s | uint32(uint64(1)<<(32-p.Bits())-1)
		if have && pl == cur && s == end+1 {
			end, count = e, count+1
			continue
		}
		flush()
		have, cur, start, end, count = true, pl, s, e, 1
	}
	flush()
	return w
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
