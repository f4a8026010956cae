// Package geo is the vocabulary of a client's place (Location, provinces,
// continents, carriers, special-purpose ranges) and the local databases
// that give it: the formats Formats lists, each rank's answer laid over
// the one below (DB). The chain of sources that asks them is locate's;
// the carrier lists are geo/carrierlist's.
package geo

import (
	"sync"
	"sync/atomic"
)

// Source says which layer produced a Location.
type Source uint8

const (
	SourceNone  Source = iota
	SourceCache        // the process's location cache; "lru" in logs and metrics
	SourceDB
	SourceRedis
	SourceOnline
	SourceIPDB
	SourceOverride
	SourceIP2Region
)

// The Sources of carrier lists: ListSource gives each list name one of
// them, whose String names the list; past maxListSources names, they
// share SourceList.
const (
	sourceListBase Source = 128
	maxListSources        = 127
	SourceList     Source = sourceListBase + maxListSources // "list"
)

var listSources struct {
	mu    sync.Mutex
	names [maxListSources]atomic.Pointer[string] // "list:" + name
}

// ListSource is the Source of the carrier list name: its String is
// "list:" + name. Names are kept for the life of the process.
func ListSource(name string) Source {
	label := "list:" + name
	listSources.mu.Lock()
	defer listSources.mu.Unlock()
	for i := range listSources.names {
		p := listSources.names[i].Load()
		if p == nil {
			listSources.names[i].Store(&label)
			return sourceListBase + Source(i)
		}
		if *p == label {
			return sourceListBase + Source(i)
		}
	}
	return SourceList
}

func (s Source) String() string {
	switch s {
	case SourceCache:
		return "lru"
	case SourceDB:
		return "db"
	case SourceRedis:
		return "redis"
	case SourceOnline:
		return "online"
	case SourceIPDB:
		return "ipdb"
	case SourceOverride:
		return "override"
	case SourceIP2Region:
		return "ip2region"
	case SourceList:
		return "list"
	}
	if s >= sourceListBase && s < SourceList {
		if p := listSources.names[s-sourceListBase].Load(); p != nil {
			return *p
		}
	}
	return "none"
}

// Location is what the plugin knows about a client address. The zero value
// means "nothing known": the location-free choice.
type Location struct {
	Country   string // ISO 3166-1 alpha-2, upper case; "" when unknown
	Continent string // two-letter continent code (AS, EU, NA, SA, AF, OC, AN); "" when unknown
	Province  string // ISO 3166-2 subdivision code without the country prefix, e.g. "ZJ"; "" when unknown
	City      string // English city name; "" when unknown
	// HasCoords is true only when Lat/Lon locate the client at province or
	// city level. A country-level position is never treated as a coordinate.
	HasCoords bool
	Lat, Lon  float64
	// ProvinceCoords is set when Lat/Lon are the province's capital, not
	// the client's city: distance then counts only across provinces.
	ProvinceCoords bool
	Radius         uint16 // accuracy radius, km
	// ISP is the normalized carrier (telecom, unicom, mobile, edu, or the
	// lower-cased organisation name) once Carriers.Apply ran; a source
	// reports its raw organisation name here.
	ISP string
	ASN uint32
	// Bits is the prefix length of the most specific database network
	// (City or ASN) that produced this location; it bounds the ECS scope.
	Bits uint8
	// SpreadBits is the prefix length of the widest IPv4 unit the spread
	// may hash this location's network on: the place each database puts
	// it in has networks enough that, cut to such units, it counts
	// SpreadUnits units of equal weight. 0: cut to spread_prefix (a
	// database's place is too small, or no database measured it: an
	// override, a refinement, ip2region, IPv6).
	SpreadBits uint8
	Source     Source
	// Special is set when the address is in a range that never goes to geo
	// lookup (private, loopback, CGNAT, documentation, ...). Bits is then the
	// length of that range.
	Special bool
}
