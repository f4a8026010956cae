package gslb

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
	"gopkg.in/yaml.v3"
)

// nodeFile is the node table's YAML schema (README "Node table").
type nodeFile struct {
	Nodes         []nodeEntry         `yaml:"nodes"`
	Records       []recordEntry       `yaml:"records"`
	Neighbors     map[string][]string `yaml:"neighbors"`
	Regions       map[string][]string `yaml:"regions"`
	Carriers      carrierEntry        `yaml:"carriers"`
	ProbeDefaults health.Spec         `yaml:"probe_defaults"`
	Nameservers   []string            `yaml:"nameservers"`
}

type nodeEntry struct {
	ID       string       `yaml:"id"`
	IPv4     []string     `yaml:"ipv4"`
	IPv6     []string     `yaml:"ipv6"`
	Country  string       `yaml:"country"`
	Province string       `yaml:"province"`
	City     string       `yaml:"city"`
	ISP      string       `yaml:"isp"`
	Lat      *float64     `yaml:"lat"`
	Lon      *float64     `yaml:"lon"`
	Cost     *float64     `yaml:"cost"`
	Load     *float64     `yaml:"load"`
	Probe    *health.Spec `yaml:"probe"`
}

type recordEntry struct {
	Name  string   `yaml:"name"`
	TTL   *uint32  `yaml:"ttl"`
	Nodes []string `yaml:"nodes"`
}

type carrierEntry struct {
	ASN   map[uint32]string `yaml:"asn"`
	Names map[string]string `yaml:"names"`
}

// node is one loaded node: what scoring sees plus what the answer needs.
type node struct {
	scoring.Node
	City string
	v4   []netip.Addr
	v6   []netip.Addr
}

// record is one name the plugin answers, with its candidates per family.
type record struct {
	name   string
	ttl    uint32
	v4, v6 []int // indices of the record's nodes that have an address of that family
}

// table is an immutable, validated node table.
type table struct {
	path     string
	nodes    []node
	records  map[string]*record
	topo     *scoring.Topology
	carriers *geo.Carriers
	probes   []health.Target
	// ents are the empty non-terminals: names above a record, inside the
	// zone, that are not records themselves. They exist (NODATA, not NXDOMAIN).
	ents        map[string]bool
	nameservers []string // the apex NS, and the SOA's MNAME when set
	hash        [32]byte // content fingerprint, to notice real changes on reload
	// carrierSig fingerprints the file's carriers, which the geo database
	// is opened with: a change means reopening it.
	carrierSig string
}

// loadTable reads and validates a node table. Every error names the file,
// and the line, entry and field where it can.
func loadTable(path string, zones []string, defaultTTL uint32) (*table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node table: %w", err)
	}
	return tableFrom(path, data, zones, defaultTTL)
}

func tableFrom(path string, data []byte, zones []string, defaultTTL uint32) (*table, error) {
	t, err := parseTable(data, zones, defaultTTL)
	if err != nil {
		return nil, fmt.Errorf("node table %s: %w", path, err)
	}
	t.path = path
	return t, nil
}

func parseTable(data []byte, zones []string, defaultTTL uint32) (*table, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty file")
	}
	doc := root.Content[0]
	if err := checkKeys(doc, reflect.TypeOf(nodeFile{}), ""); err != nil {
		return nil, err
	}
	var f nodeFile
	if err := doc.Decode(&f); err != nil {
		return nil, err
	}
	nodeLines := entryLines(doc, "nodes")
	recLines := entryLines(doc, "records")

	t := &table{records: make(map[string]*record)}
	t.hash = sha256.Sum256(data)
	if len(f.Nodes) == 0 {
		return nil, errors.New("nodes: at least one node is required")
	}
	index := make(map[string]int, len(f.Nodes))
	for i := range f.Nodes {
		e := &f.Nodes[i]
		where := fmt.Sprintf("line %d: nodes[%d]", lineAt(nodeLines, i), i)
		if e.ID != "" {
			where += fmt.Sprintf(" (id %s)", e.ID)
		}
		n, err := buildNode(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if j, dup := index[n.ID]; dup {
			return nil, fmt.Errorf("%s: field id: duplicate id %q, first at line %d", where, n.ID, lineAt(nodeLines, j))
		}
		index[n.ID] = i
		if e.Probe != nil {
			s := e.Probe.WithDefaults(f.ProbeDefaults)
			first := ""
			if len(n.v4) > 0 {
				first = n.v4[0].String()
			} else if len(n.v6) > 0 {
				first = n.v6[0].String()
			}
			if err := s.Validate(first); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			t.probes = append(t.probes, health.Target{ID: n.ID, Spec: s})
		}
		t.nodes = append(t.nodes, n)
	}

	if len(f.Records) == 0 {
		return nil, errors.New("records: at least one record is required")
	}
	for i := range f.Records {
		e := &f.Records[i]
		where := fmt.Sprintf("line %d: records[%d]", lineAt(recLines, i), i)
		if e.Name == "" {
			return nil, fmt.Errorf("%s: field name: missing", where)
		}
		if _, ok := dns.IsDomainName(e.Name); !ok {
			return nil, fmt.Errorf("%s: field name: %q is not a domain name", where, e.Name)
		}
		name := strings.ToLower(dns.Fqdn(e.Name))
		where += " (name " + name + ")"
		if plugin.Zones(zones).Matches(name) == "" {
			return nil, fmt.Errorf("%s: field name: outside the zones %s", where, strings.Join(zones, " "))
		}
		if _, dup := t.records[name]; dup {
			return nil, fmt.Errorf("%s: field name: duplicate record", where)
		}
		r := &record{name: name, ttl: defaultTTL}
		if e.TTL != nil {
			if *e.TTL == 0 || *e.TTL > math.MaxInt32 {
				return nil, fmt.Errorf("%s: field ttl: %d is not in 1..%d", where, *e.TTL, math.MaxInt32)
			}
			r.ttl = *e.TTL
		}
		if e.Nodes != nil && len(e.Nodes) == 0 {
			return nil, fmt.Errorf("%s: field nodes: an empty list; leave the field out to use every node", where)
		}
		members := make([]int, 0, len(t.nodes))
		if len(e.Nodes) == 0 {
			for j := range t.nodes {
				members = append(members, j)
			}
		}
		seen := map[int]bool{}
		for _, id := range e.Nodes {
			j, ok := index[id]
			if !ok {
				return nil, fmt.Errorf("%s: field nodes: unknown node %q", where, id)
			}
			if seen[j] {
				return nil, fmt.Errorf("%s: field nodes: node %q listed twice", where, id)
			}
			seen[j] = true
			members = append(members, j)
		}
		for _, j := range members {
			if len(t.nodes[j].v4) > 0 {
				r.v4 = append(r.v4, j)
			}
			if len(t.nodes[j].v6) > 0 {
				r.v6 = append(r.v6, j)
			}
		}
		t.records[name] = r
	}
	t.ents = make(map[string]bool)
	for name := range t.records {
		zone := plugin.Zones(zones).Matches(name)
		for n := name; n != zone; {
			off, end := dns.NextLabel(n, 0)
			if end {
				break
			}
			n = n[off:]
			if n == zone || t.records[n] != nil {
				continue
			}
			t.ents[n] = true
		}
	}
	for i, ns := range f.Nameservers {
		if _, ok := dns.IsDomainName(ns); !ok || ns == "" {
			return nil, fmt.Errorf("nameservers[%d]: %q is not a domain name", i, ns)
		}
		t.nameservers = append(t.nameservers, strings.ToLower(dns.Fqdn(ns)))
	}

	topo, err := buildTopology(f.Neighbors, f.Regions)
	if err != nil {
		return nil, err
	}
	t.topo = topo

	t.carrierSig = fmt.Sprint(f.Carriers.ASN, f.Carriers.Names) // fmt sorts map keys
	t.carriers = geo.DefaultCarriers().Clone()
	for asn, c := range f.Carriers.ASN {
		if c = geo.NormalizeCarrier(c); c == "" {
			return nil, fmt.Errorf("carriers.asn: %d: empty carrier", asn)
		}
		t.carriers.AddASN(asn, c)
	}
	names := make([]string, 0, len(f.Carriers.Names))
	for s := range f.Carriers.Names {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		c := geo.NormalizeCarrier(f.Carriers.Names[s])
		if strings.TrimSpace(s) == "" || c == "" {
			return nil, fmt.Errorf("carriers.names: %q: empty name or carrier", s)
		}
		t.carriers.AddName(s, c)
	}
	return t, nil
}

func buildNode(e *nodeEntry) (node, error) {
	var n node
	if e.ID == "" {
		return n, errors.New("field id: missing")
	}
	n.ID = e.ID
	for k, s := range e.IPv4 {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return n, fmt.Errorf("field ipv4[%d]: %q is not an IPv4 address", k, s)
		}
		n.v4 = append(n.v4, a)
	}
	for k, s := range e.IPv6 {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return n, fmt.Errorf("field ipv6[%d]: %q is not an IPv6 address", k, s)
		}
		n.v6 = append(n.v6, a)
	}
	if len(n.v4)+len(n.v6) == 0 {
		return n, errors.New("field ipv4/ipv6: the node has no address")
	}
	n.Country = strings.ToUpper(strings.TrimSpace(e.Country))
	if n.Country == "" {
		return n, errors.New("field country: missing")
	}
	if n.Continent = geo.ContinentOf(n.Country); n.Continent == "" {
		return n, fmt.Errorf("field country: %q is not an ISO 3166-1 alpha-2 code", e.Country)
	}
	if e.Province != "" {
		p, ok := geo.NormalizeProvince(n.Country, e.Province)
		if !ok {
			return n, fmt.Errorf("field province: unknown province %q for country %s", e.Province, n.Country)
		}
		n.Province = p
	}
	n.City = e.City
	n.ISP = geo.NormalizeCarrier(e.ISP)
	if e.Lat == nil || e.Lon == nil {
		return n, errors.New("field lat/lon: coordinates are required")
	}
	if lat := *e.Lat; math.IsNaN(lat) || lat < -90 || lat > 90 {
		return n, fmt.Errorf("field lat: %v is outside -90..90", lat)
	}
	if lon := *e.Lon; math.IsNaN(lon) || lon < -180 || lon > 180 {
		return n, fmt.Errorf("field lon: %v is outside -180..180", lon)
	}
	n.Lat, n.Lon = *e.Lat, *e.Lon
	if e.Cost != nil {
		if c := *e.Cost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return n, fmt.Errorf("field cost: %v must be >= 0", c)
		}
		n.Cost = *e.Cost
	}
	if e.Load != nil {
		if l := *e.Load; math.IsNaN(l) || l < 0 || l > 1 {
			return n, fmt.Errorf("field load: %v is outside 0..1", l)
		}
		n.Load = *e.Load
	}
	return n, nil
}

// parseProvinceKey reads "CC-SUB" for any country, or a Chinese province in
// any spelling NormalizeProvince accepts.
func parseProvinceKey(s string) (scoring.ProvinceKey, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '-'); i == 2 {
		cc := strings.ToUpper(s[:2])
		if geo.ContinentOf(cc) != "" {
			if p, ok := geo.NormalizeProvince(cc, s[3:]); ok {
				return scoring.ProvinceKey{Country: cc, Province: p}, nil
			}
		}
	}
	if p, ok := geo.NormalizeProvince("CN", s); ok && geo.ProvinceName("CN", p) != "" {
		return scoring.ProvinceKey{Country: "CN", Province: p}, nil
	}
	return scoring.ProvinceKey{}, fmt.Errorf("%q is not a province: use COUNTRY-CODE such as CN-ZJ or US-CA", s)
}

func buildTopology(neighbors, regions map[string][]string) (*scoring.Topology, error) {
	topo := scoring.DefaultTopology()
	if len(neighbors) == 0 && len(regions) == 0 {
		return topo, nil
	}
	nb := make(map[scoring.ProvinceKey][]string, len(neighbors))
	for k, list := range neighbors {
		key, err := parseProvinceKey(k)
		if err != nil {
			return nil, fmt.Errorf("neighbors: key %w", err)
		}
		for _, v := range list {
			p, err := parseProvinceKey(v)
			if err != nil {
				// A bare code of the key's own country, e.g. "NV" under "US-CA".
				code, ok := geo.NormalizeProvince(key.Country, v)
				if !ok {
					return nil, fmt.Errorf("neighbors: %s: %w", k, err)
				}
				p = scoring.ProvinceKey{Country: key.Country, Province: code}
			}
			if p.Country != key.Country {
				return nil, fmt.Errorf("neighbors: %s: %q is in another country", k, v)
			}
			nb[key] = append(nb[key], p.Province)
		}
	}
	rg := make(map[string]map[string][]string)
	for name, list := range regions {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("regions: empty region name")
		}
		country := ""
		for _, v := range list {
			p, err := parseProvinceKey(v)
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

// checkKeys rejects keys the schema doesn't know, naming the line and path.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	n = resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if tag := strings.Split(f.Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				fields[tag] = f.Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: %sunknown key %q", k.Line, prefix(path), k.Value)
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// entryLines returns the line of each element of the top-level sequence key.
func entryLines(doc *yaml.Node, key string) []int {
	doc = resolve(doc)
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			seq := resolve(doc.Content[i+1])
			lines := make([]int, len(seq.Content))
			for j, c := range seq.Content {
				lines[j] = c.Line
			}
			return lines
		}
	}
	return nil
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// lineAt returns lines[i], or 0 when the entry has no known line.
func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}
