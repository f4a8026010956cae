package overrides

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/yamlfile"
)

// file is the overrides file's YAML schema (README "Overrides").
type file struct {
	Overrides []EntryYAML `yaml:"overrides"`
}

// EntryYAML is one override as the overrides file, the admin API's pins
// and its state file write it.
type EntryYAML struct {
	CIDR     string         `yaml:"cidr,omitempty" json:"cidr,omitempty"`
	CIDRs    []string       `yaml:"cidrs,omitempty" json:"cidrs,omitempty"`
	Location *LocationYAML  `yaml:"location,omitempty" json:"location,omitempty"`
	Nodes    []string       `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	Expires  *yamlfile.Time `yaml:"expires,omitempty" json:"expires,omitempty"`
	Note     string         `yaml:"note,omitempty" json:"note,omitempty"`
}

// LocationYAML is a corrected location as the file and the admin API write
// it.
type LocationYAML struct {
	Country  string   `yaml:"country" json:"country"`
	Province string   `yaml:"province,omitempty" json:"province,omitempty"`
	City     string   `yaml:"city,omitempty" json:"city,omitempty"`
	ISP      string   `yaml:"isp,omitempty" json:"isp,omitempty"`
	Lat      *float64 `yaml:"lat,omitempty" json:"lat,omitempty"`
	Lon      *float64 `yaml:"lon,omitempty" json:"lon,omitempty"`
}

// Load reads an overrides file; known reports whether a node id exists.
func Load(path string, known func(id string) bool) (*Table, error) {
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultMaxSize)
	if err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	}
	return Parse(path, data, known)
}

// Parse validates an overrides file read from path. Errors name the file,
// the line, the entry and the field.
func Parse(path string, data []byte, known func(id string) bool) (*Table, error) {
	defer yamlfile.Release(len(data))
	t, err := parse(data, known)
	if err != nil {
		return nil, fmt.Errorf("overrides %s: %w", path, err)
	}
	return t, nil
}

func parse(data []byte, known func(id string) bool) (*Table, error) {
	var f file
	doc, err := yamlfile.Decode(data, &f)
	if err != nil {
		if errors.Is(err, yamlfile.ErrEmpty) {
			return New(nil), nil
		}
		return nil, err
	}
	lines := yamlfile.EntryLines(doc, "overrides")
	entries := make([]Entry, 0, len(f.Overrides))
	first := map[netip.Prefix]int{}
	for i, y := range f.Overrides {
		at := yamlfile.Where("overrides", lines, i)
		e, err := y.Entry(known)
		if err != nil {
			if l := yamlfile.MessageLine(data, "overrides", i, err.Error()); l != 0 {
				at = fmt.Sprintf("line %d: overrides[%d]", l, i)
			}
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		e.Line = yamlfile.LineAt(lines, i)
		for _, p := range e.Prefixes {
			if l, dup := first[p]; dup {
				return nil, fmt.Errorf("%s: field cidr: %s is overridden already, at line %d", at, p, l)
			}
			first[p] = e.Line
		}
		entries = append(entries, e)
	}
	return New(entries), nil
}

// Entry validates y; known reports whether a node id exists.
func (y *EntryYAML) Entry(known func(id string) bool) (Entry, error) {
	e := Entry{Note: y.Note}
	cidrs := y.CIDRs
	if y.CIDR != "" {
		cidrs = append([]string{y.CIDR}, cidrs...)
	}
	if len(cidrs) == 0 {
		return e, errors.New("field cidr: missing (cidr or cidrs)")
	}
	for _, s := range cidrs {
		p, err := ParsePrefix(s)
		if err != nil {
			return e, fmt.Errorf("field cidr: %w", err)
		}
		e.Prefixes = append(e.Prefixes, p)
	}
	if y.Nodes != nil && len(y.Nodes) == 0 {
		return e, errors.New("field nodes: an empty list")
	}
	if y.Location == nil && len(y.Nodes) == 0 {
		return e, errors.New("field location/nodes: an override corrects a location, pins nodes, or both")
	}
	if y.Location != nil {
		loc, err := y.Location.Location()
		if err != nil {
			return e, fmt.Errorf("field location.%w", err)
		}
		e.Location = &loc
	}
	for _, id := range y.Nodes {
		if known != nil && !known(id) {
			return e, fmt.Errorf("field nodes: unknown node %q", id)
		}
	}
	e.Nodes = y.Nodes
	if y.Expires != nil {
		e.Expires = y.Expires.Time
	}
	return e, nil
}

// ParsePrefix reads a network, IPv4 or IPv6; host bits must be zero.
func ParsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return p, fmt.Errorf("%q is not a network such as 203.0.113.0/24", s)
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return p, fmt.Errorf("%s: an IPv4-mapped network needs a prefix of at least /96 (::ffff:0:0/96 is 0.0.0.0/0)", p)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	if p.Masked() != p {
		return p, fmt.Errorf("%s has bits set after the prefix (the network is %s)", p, p.Masked())
	}
	return p, nil
}

// Location checks and normalizes a corrected location. Without
// coordinates, a province's clients are placed at its capital.
func (y *LocationYAML) Location() (geo.Location, error) {
	var l geo.Location
	var err error
	if l.Country, l.Continent, l.Province, err = geo.NormalizePlace(y.Country, y.Province); err != nil {
		return l, err
	}
	l.City = strings.TrimSpace(y.City)
	l.ISP = strings.TrimSpace(y.ISP) // the carrier table maps it
	switch {
	case (y.Lat == nil) != (y.Lon == nil):
		return l, errors.New("lat/lon: give both or neither")
	case y.Lat != nil:
		if math.IsNaN(*y.Lat) || math.Abs(*y.Lat) > 90 || math.IsNaN(*y.Lon) || math.Abs(*y.Lon) > 180 {
			return l, fmt.Errorf("lat/lon: %v,%v is not a place", *y.Lat, *y.Lon)
		}
		l.HasCoords, l.Lat, l.Lon = true, *y.Lat, *y.Lon
	case l.Province != "":
		if lat, lon, ok := geo.ProvinceCapital(l.Country, l.Province); ok {
			l.HasCoords, l.Lat, l.Lon, l.ProvinceCoords = true, lat, lon, true
		}
	}
	l.Source = geo.SourceOverride
	return l, nil
}
