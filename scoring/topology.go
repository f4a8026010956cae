package scoring

import "sort"

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
	countries := sortedKeys(regions)
	for _, c := range countries {
		if n.members[c] == nil {
			n.members[c] = make(map[string][]string)
		}
		for _, r := range sortedKeys(regions[c]) {
			for _, p := range n.members[c][r] {
				delete(n.region, ProvinceKey{c, p})
			}
			ps := regions[c][r]
			for _, p := range ps {
				k := ProvinceKey{c, p}
				if old, ok := n.region[k]; ok && old != r {
					n.members[c][old] = without(n.members[c][old], p)
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
	return contains(t.neighborsOf(country, a), b)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// without returns a copy of list without s; the original may be shared.
func without(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
