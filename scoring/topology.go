package scoring

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gslbdns/gslb/geo"
)

// ProvinceKey names a province of a country.
type ProvinceKey struct{ Country, Province string }

// Topology holds neighbouring provinces and regions per country. It is
// immutable after build, so it can be shared by concurrent queries.
type Topology struct {
	neighbors map[ProvinceKey][]string
	region    map[ProvinceKey]string
	members   map[string]map[string][]string // country -> region -> provinces
}

// chinaNeighbors are the land borders of China's provincial-level divisions,
// plus sea/bridge links for HI, TW, HK and MO. Every entry is written out in
// both directions; a test checks the symmetry.
var chinaNeighbors = map[string][]string{
	"BJ": {"TJ", "HE"},
	"TJ": {"BJ", "HE"},
	"HE": {"BJ", "TJ", "SX", "NM", "LN", "SD", "HA"},
	"SX": {"HE", "NM", "SN", "HA"},
	"NM": {"HL", "JL", "LN", "HE", "SX", "SN", "NX", "GS"},
	"LN": {"HE", "NM", "JL"},
	"JL": {"LN", "NM", "HL"},
	"HL": {"JL", "NM"},
	"SH": {"JS", "ZJ"},
	"JS": {"SH", "ZJ", "AH", "SD"},
	"ZJ": {"SH", "JS", "AH", "JX", "FJ"},
	"AH": {"JS", "ZJ", "JX", "HB", "HA", "SD"},
	"FJ": {"ZJ", "JX", "GD", "TW"},
	"JX": {"ZJ", "AH", "HB", "HN", "GD", "FJ"},
	"SD": {"HE", "HA", "AH", "JS"},
	"HA": {"HE", "SX", "SN", "HB", "AH", "SD"},
	"HB": {"HA", "AH", "JX", "HN", "CQ", "SN"},
	"HN": {"HB", "JX", "GD", "GX", "GZ", "CQ"},
	"GD": {"FJ", "JX", "HN", "GX", "HI", "HK", "MO"},
	"GX": {"GD", "HN", "GZ", "YN", "HI"},
	"HI": {"GD", "GX"},
	"CQ": {"HB", "HN", "GZ", "SC", "SN"},
	"SC": {"CQ", "GZ", "YN", "XZ", "QH", "GS", "SN"},
	"GZ": {"SC", "CQ", "HN", "GX", "YN"},
	"YN": {"SC", "GZ", "GX", "XZ"},
	"XZ": {"XJ", "QH", "SC", "YN"},
	"SN": {"SX", "HA", "HB", "CQ", "SC", "GS", "NX", "NM"},
	"GS": {"SN", "NX", "NM", "XJ", "QH", "SC"},
	"QH": {"GS", "XJ", "XZ", "SC"},
	"NX": {"NM", "SN", "GS"},
	"XJ": {"GS", "QH", "XZ"},
	"TW": {"FJ"},
	"HK": {"GD"},
	"MO": {"GD"},
}

var chinaRegions = map[string][]string{
	"华北": {"BJ", "TJ", "HE", "SX", "NM"},
	"东北": {"LN", "JL", "HL"},
	"华东": {"SH", "JS", "ZJ", "AH", "FJ", "JX", "SD", "TW"},
	"华中": {"HA", "HB", "HN"},
	"华南": {"GD", "GX", "HI", "HK", "MO"},
	"西南": {"CQ", "SC", "GZ", "YN", "XZ"},
	"西北": {"SN", "GS", "QH", "NX", "XJ"},
}

// DefaultTopology returns the built-in topology: China's 34 provincial-level
// divisions with their neighbours and regions.
func DefaultTopology() *Topology {
	t := &Topology{
		neighbors: make(map[ProvinceKey][]string, len(chinaNeighbors)),
		region:    make(map[ProvinceKey]string, len(chinaNeighbors)),
		members:   map[string]map[string][]string{"CN": {}},
	}
	for p, ns := range chinaNeighbors {
		t.neighbors[ProvinceKey{"CN", p}] = append([]string(nil), ns...)
	}
	for r, ps := range chinaRegions {
		t.members["CN"][r] = append([]string(nil), ps...)
		for _, p := range ps {
			t.region[ProvinceKey{"CN", p}] = r
		}
	}
	return t
}

// Override returns a new Topology. Each neighbors entry replaces (or adds)
// the list of that province; neighbour lists are directional, so an operator
// who wants symmetry lists both sides. Each region in regions
// (country -> region -> provinces) gets exactly the listed members, which
// leave their previous region. Input is already normalized by the caller.
func (t *Topology) Override(neighbors map[ProvinceKey][]string, regions map[string]map[string][]string) *Topology {
	n := &Topology{
		neighbors: make(map[ProvinceKey][]string),
		region:    make(map[ProvinceKey]string),
		members:   make(map[string]map[string][]string),
	}
	if t != nil {
		for k, v := range t.neighbors {
			n.neighbors[k] = v
		}
		for k, v := range t.region {
			n.region[k] = v
		}
		for c, rs := range t.members {
			m := make(map[string][]string, len(rs))
			for r, ps := range rs {
				m[r] = ps
			}
			n.members[c] = m
		}
	}
	for k, v := range neighbors {
		n.neighbors[k] = append([]string(nil), v...)
	}

	// Sorted order keeps the result deterministic when a province is listed
	// in two regions: the last one in sort order wins.
	for _, c := range slices.Sorted(maps.Keys(regions)) {
		if n.members[c] == nil {
			n.members[c] = make(map[string][]string)
		}
		for _, r := range slices.Sorted(maps.Keys(regions[c])) {
			for _, p := range n.members[c][r] {
				delete(n.region, ProvinceKey{c, p})
			}
			ps := regions[c][r]
			for _, p := range ps {
				k := ProvinceKey{c, p}
				if old, ok := n.region[k]; ok && old != r {
					// A copy: the old list may be shared with t.
					n.members[c][old] = slices.DeleteFunc(slices.Clone(n.members[c][old]), func(x string) bool { return x == p })
				}
				n.region[k] = r
			}
			n.members[c][r] = append([]string(nil), ps...)
		}
	}
	return n
}

// Neighbors reports whether b is listed as a neighbour of province a.
func (t *Topology) Neighbors(country, a, b string) bool {
	return slices.Contains(t.neighborsOf(country, a), b)
}

// Region returns the region of a province, "" when it has none.
func (t *Topology) Region(country, province string) string {
	if t == nil || province == "" {
		return ""
	}
	return t.region[ProvinceKey{country, province}]
}

func (t *Topology) neighborsOf(country, province string) []string {
	if t == nil || province == "" {
		return nil
	}
	return t.neighbors[ProvinceKey{country, province}]
}

// ParseTopology returns the default topology with the node table's
// neighbors and regions applied. Keys and members are provinces in any
// spelling geo.NormalizeProvince accepts: COUNTRY-CODE (US-CA) anywhere, a
// bare code of the key's country in a neighbour list, or any spelling of a
// Chinese province.
func ParseTopology(neighbors, regions map[string][]string) (*Topology, error) {
	topo := DefaultTopology()
	if len(neighbors) == 0 && len(regions) == 0 {
		return topo, nil
	}
	nb := make(map[ProvinceKey][]string, len(neighbors))
	for _, k := range slices.Sorted(maps.Keys(neighbors)) {
		key, err := ParseProvinceKey(k)
		if err != nil {
			return nil, fmt.Errorf("neighbors: key %w", err)
		}
		for _, v := range neighbors[k] {
			p, err := ParseProvinceKey(v)
			if err != nil {
				// A bare code of the key's own country, e.g. "NV" under "US-CA".
				code, ok := geo.NormalizeProvince(key.Country, v)
				if !ok {
					return nil, fmt.Errorf("neighbors: %s: %w", k, err)
				}
				p = ProvinceKey{Country: key.Country, Province: code}
			}
			if p.Country != key.Country {
				return nil, fmt.Errorf("neighbors: %s: %q is in another country", k, v)
			}
			nb[key] = append(nb[key], p.Province)
		}
	}
	rg := make(map[string]map[string][]string)
	for _, name := range slices.Sorted(maps.Keys(regions)) {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("regions: empty region name")
		}
		country := ""
		for _, v := range regions[name] {
			p, err := ParseProvinceKey(v)
			if err != nil {
				return nil, fmt.Errorf("regions: %s: %w", name, err)
			}
			if country != "" && p.Country != country {
				return nil, fmt.Errorf("regions: %s: %q is in another country than %s", name, v, country)
			}
			country = p.Country
			if rg[country] == nil {
				rg[country] = make(map[string][]string)
			}
			rg[country][name] = append(rg[country][name], p.Province)
		}
	}
	return topo.Override(nb, rg), nil
}

// ParseProvinceKey reads "CC-SUB" for any country, or a Chinese province in
// any spelling geo.NormalizeProvince accepts.
func ParseProvinceKey(s string) (ProvinceKey, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '-'); i == 2 {
		cc := strings.ToUpper(s[:2])
		if geo.ContinentOf(cc) != "" {
			if p, ok := geo.NormalizeProvince(cc, s[3:]); ok {
				return ProvinceKey{Country: cc, Province: p}, nil
			}
		}
	}
	if p, ok := geo.NormalizeProvince("CN", s); ok && geo.ProvinceName("CN", p) != "" {
		return ProvinceKey{Country: "CN", Province: p}, nil
	}
	return ProvinceKey{}, fmt.Errorf("%q is not a province: use COUNTRY-CODE such as CN-ZJ or US-CA", s)
}
