// Package table reads and validates the node table: the nodes, the records
// they answer, the topology and carrier additions, and the probes. A Table
// is immutable once built, and Diff says what a reload changed.
package table

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/internal/yield"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// Node is one loaded node: what scoring sees plus what the answer needs.
type Node struct {
	scoring.Node
	City   string
	V4, V6 []netip.Addr
	// CNAME, when set, is what the node answers for A and AAAA: a name
	// (another CDN's edge) the resolver follows.
	CNAME string
}

// Record is one name the plugin answers, with its candidates per family:
// indices of the record's nodes that have an address of that family.
type Record struct {
	Name string
	// Hash is a hash of Name, the same in every table of this process:
	// what keys the record across reloads (see Table.HashesUnique). 0 in
	// a Record not built by Parse.
	Hash uint64
	TTL  uint32
	// MinTTL is the ttl of an answer that may change within TTL; 0: the
	// plugin's.
	MinTTL   uint32
	Priority scoring.Priority
	V4, V6   []int
	// Fallback, when set, is the CNAME answered when no node is usable,
	// instead of fail_open's node.
	Fallback string
	// HTTPS, when set, are the SvcParams of the record's HTTPS answer;
	// the hints come from the decision.
	HTTPS []dns.SVCBKeyValue
}

// nameSeed seeds Record.Hash.
var nameSeed = maphash.MakeSeed()

// Table is an immutable, validated node table.
type Table struct {
	Path    string
	Nodes   []Node
	Records map[string]*Record
	Names   []string // the records' names in the file's order
	// HashesUnique: no two records share a Record.Hash, which then
	// names a record of this table. Set by Parse.
	HashesUnique bool
	// ENTs are the empty non-terminals: names above a record, inside the
	// zone, that are not records themselves. They exist (NODATA, not
	// NXDOMAIN).
	ENTs        map[string]bool
	Nameservers []string // the apex NS, and the SOA's MNAME when set
	Topology    *scoring.Topology
	Carriers    *geo.Carriers
	Probes      []health.Target // merged and validated

	Hash [32]byte // the file's content
	sums sums     // each part's fingerprint, for Diff
}

// Load reads and validates a node table. Every error names the file, and
// the line, entry and field where it can.
func Load(path string, zones []string, defaultTTL uint32) (*Table, error) {
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultMaxSize)
	if err != nil {
		return nil, fmt.Errorf("node table: %w", err)
	}
	return Parse(path, data, zones, defaultTTL)
}

// Parse validates a node table read from path.
func Parse(path string, data []byte, zones []string, defaultTTL uint32) (*Table, error) {
	defer yamlfile.Release(len(data))
	t, err := parse(data, zones, defaultTTL)
	if err != nil {
		return nil, fmt.Errorf("node table %s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

func parse(data []byte, zones []string, defaultTTL uint32) (*Table, error) {
	var f file
	y := yield.New() // through the decode and the build: see package yield
	doc, err := yamlfile.DecodeYielding(data, &f, y)
	if err != nil {
		return nil, err
	}
	t := &Table{Records: make(map[string]*Record), Hash: sha256.Sum256(data)}
	// Before the nodes: their carriers are checked against it.
	if t.Carriers, err = geo.DefaultCarriers().Extend(f.Carriers.ASN, f.Carriers.Names); err != nil {
		return nil, err
	}
	index, err := t.addNodes(&f, yamlfile.EntryLines(doc, "nodes"), y)
	if err != nil {
		if e := fromDefaults(data, err); e != nil {
			return nil, e
		}
	}
	err = atField(func(i int, msg string) int { return yamlfile.MessageLine(data, "nodes", i, msg) }, err)
	if err != nil {
		return nil, err
	}
	if err := t.addRecords(&f, index, yamlfile.EntryLines(doc, "records"), zones, defaultTTL, y); err != nil {
		return nil, atField(func(i int, msg string) int { return yamlfile.MessageLine(data, "records", i, msg) }, err)
	}
	if t.Topology, err = scoring.ParseTopology(f.Neighbors, f.Regions); err != nil {
		return nil, err
	}
	for i, ns := range f.Nameservers {
		if _, ok := dns.IsDomainName(ns); !ok || ns == "" {
			return nil, fmt.Errorf("nameservers[%d]: %q is not a domain name", i, ns)
		}
		t.Nameservers = append(t.Nameservers, strings.ToLower(dns.Fqdn(ns)))
	}
	y.Point()
	t.sums = fingerprint(t, &f)
	return t, nil
}

// entryError is an error in entry i of a list, at "line N: list[i] ...: msg".
type entryError struct {
	i       int
	at, msg string
}

func (e *entryError) Error() string { return e.at + ": " + e.msg }

// fromDefaults cites probe_defaults' line for a node's probe error about
// a key the node's probe does not set and probe_defaults does; nil for
// any other error.
func fromDefaults(data []byte, err error) error {
	var ee *entryError
	if !errors.As(err, &ee) {
		return nil
	}
	rest, ok := strings.CutPrefix(ee.msg, "probe.")
	key, msg, ok2 := strings.Cut(rest, ": ")
	if !ok || !ok2 || strings.ContainsAny(key, " .[") {
		return nil
	}
	if yamlfile.KeyLine(data, "nodes", strconv.Itoa(ee.i), "probe", key) != 0 {
		return nil
	}
	line := yamlfile.KeyLine(data, "probe_defaults", key)
	if line == 0 {
		return nil
	}
	_, entry, _ := strings.Cut(ee.at, ": ")
	return fmt.Errorf("line %d: probe_defaults.%s, in the probe of %s: %s", line, key, entry, msg)
}

// atField moves an entry error's line from the entry's first line to the
// line of the field it names ("field lat: ...", "probe.timeout: ...").
func atField(fieldLine func(i int, msg string) int, err error) error {
	var ee *entryError
	if !errors.As(err, &ee) {
		return err
	}
	line := fieldLine(ee.i, ee.msg)
	if line == 0 {
		return err
	}
	_, rest, _ := strings.Cut(ee.at, ": ")
	return fmt.Errorf("line %d: %s: %s", line, rest, ee.msg)
}

// addNodes builds the nodes and their probes; it returns each id's index.
func (t *Table) addNodes(f *file, lines []int, y *yield.Yielder) (map[string]int, error) {
	if len(f.Nodes) == 0 {
		return nil, errors.New("nodes: at least one node is required")
	}
	index := make(map[string]int, len(f.Nodes))
	for i := range f.Nodes {
		y.Point()
		e := &f.Nodes[i]
		at := yamlfile.Where("nodes", lines, i)
		if e.ID != "" {
			at += " (id " + e.ID + ")"
		}
		n, err := buildNode(e)
		if err == nil {
			if err = t.Carriers.CheckCarrier(e.ISP, n.ISP); err != nil {
				err = fmt.Errorf("field isp: %w", err)
			}
		}
		if err != nil {
			return nil, &entryError{i, at, err.Error()}
		}
		if j, dup := index[n.ID]; dup {
			return nil, &entryError{i, at, fmt.Sprintf("field id: duplicate id %q, first at line %d", n.ID, yamlfile.LineAt(lines, j))}
		}
		index[n.ID] = i
		if e.Probe != nil {
			first := ""
			if len(n.V4) > 0 {
				first = n.V4[0].String()
			} else if len(n.V6) > 0 {
				first = n.V6[0].String()
			}
			s := e.Probe.WithDefaults(f.ProbeDefaults).ForNode(first)
			err := s.Validate()
			if err != nil && first == "" && n.CNAME != "" {
				err = fmt.Errorf("%w (a cname-only node has no address to probe: give the probe a url or an address, or leave the probe out)", err)
			}
			if err != nil {
				return nil, &entryError{i, at, err.Error()}
			}
			t.Probes = append(t.Probes, health.Target{ID: n.ID, Spec: s})
		}
		t.Nodes = append(t.Nodes, n)
	}
	return index, nil
}

// addRecords builds the records and the empty non-terminals above them.
func (t *Table) addRecords(f *file, index map[string]int, lines []int, zones []string, defaultTTL uint32, y *yield.Yielder) error {
	if len(f.Records) == 0 {
		return errors.New("records: at least one record is required")
	}
	for i := range f.Records {
		y.Point()
		e := &f.Records[i]
		at := yamlfile.Where("records", lines, i)
		if e.Name == "" {
			return &entryError{i, at, "field name: missing"}
		}
		if _, ok := dns.IsDomainName(e.Name); !ok {
			return &entryError{i, at, fmt.Sprintf("field name: %q is not a domain name", e.Name)}
		}
		name := strings.ToLower(dns.Fqdn(e.Name))
		at += " (name " + name + ")"
		if plugin.Zones(zones).Matches(name) == "" {
			return &entryError{i, at, fmt.Sprintf("field name: outside the zones %s", strings.Join(zones, " "))}
		}
		if _, dup := t.Records[name]; dup {
			return &entryError{i, at, "field name: duplicate record"}
		}
		r := &Record{Name: name, Hash: maphash.String(nameSeed, name), TTL: defaultTTL}
		if e.TTL != nil {
			r.TTL = e.TTL.max
			if e.TTL.max == 0 || e.TTL.max > math.MaxInt32 {
				return &entryError{i, at, fmt.Sprintf("field ttl: %d is not in 1..%d", e.TTL.max, math.MaxInt32)}
			}
			if e.TTL.hasMin {
				if e.TTL.min == 0 || e.TTL.min > e.TTL.max {
					return &entryError{i, at, fmt.Sprintf("field ttl: MIN %d is not in 1..MAX %d", e.TTL.min, e.TTL.max)}
				}
				r.MinTTL = e.TTL.min
			}
		}
		if e.Fallback != "" {
			if _, ok := dns.IsDomainName(e.Fallback); !ok {
				return &entryError{i, at, fmt.Sprintf("field fallback: %q is not a domain name", e.Fallback)}
			}
			r.Fallback = strings.ToLower(dns.Fqdn(e.Fallback))
			if r.Fallback == name {
				return &entryError{i, at, "field fallback: the record's own name would loop"}
			}
		}
		var err error
		if e.HTTPS != nil {
			if r.HTTPS, err = svcParams(e.HTTPS); err != nil {
				return &entryError{i, at, "field https: " + err.Error()}
			}
		}
		if r.Priority, err = scoring.ParsePriority(e.Priority); err != nil {
			return &entryError{i, at, "field priority: " + err.Error()}
		}
		if e.Nodes != nil && len(e.Nodes) == 0 {
			return &entryError{i, at, "field nodes: an empty list; leave the field out to use every node"}
		}
		members := make([]int, 0, len(t.Nodes))
		if len(e.Nodes) == 0 {
			for j := range t.Nodes {
				members = append(members, j)
			}
		}
		seen := map[int]bool{}
		for _, id := range e.Nodes {
			j, ok := index[id]
			if !ok {
				return &entryError{i, at, fmt.Sprintf("field nodes: unknown node %q", id)}
			}
			if seen[j] {
				return &entryError{i, at, fmt.Sprintf("field nodes: node %q listed twice", id)}
			}
			seen[j] = true
			members = append(members, j)
		}
		for _, j := range members {
			cname := t.Nodes[j].CNAME != ""
			if len(t.Nodes[j].V4) > 0 || cname {
				r.V4 = append(r.V4, j)
			}
			if len(t.Nodes[j].V6) > 0 || cname {
				r.V6 = append(r.V6, j)
			}
		}
		t.Records[name] = r
		t.Names = append(t.Names, name)
	}
	hashes := make(map[uint64]bool, len(t.Records))
	for _, r := range t.Records {
		hashes[r.Hash] = true
	}
	t.HashesUnique = len(hashes) == len(t.Records)
	t.ENTs = make(map[string]bool)
	for name := range t.Records {
		zone := plugin.Zones(zones).Matches(name)
		for n := name; n != zone; {
			off, end := dns.NextLabel(n, 0)
			if end {
				break
			}
			n = n[off:]
			if n != zone && t.Records[n] == nil {
				t.ENTs[n] = true
			}
		}
	}
	return nil
}

func buildNode(e *nodeEntry) (Node, error) {
	var n Node
	if e.ID == "" {
		return n, errors.New("field id: missing")
	}
	n.ID = e.ID
	for k, s := range e.IPv4 {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return n, fmt.Errorf("field ipv4[%d]: %q is not an IPv4 address", k, s)
		}
		n.V4 = append(n.V4, a)
	}
	for k, s := range e.IPv6 {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return n, fmt.Errorf("field ipv6[%d]: %q is not an IPv6 address", k, s)
		}
		n.V6 = append(n.V6, a)
	}
	if e.CNAME != "" {
		if _, ok := dns.IsDomainName(e.CNAME); !ok {
			return n, fmt.Errorf("field cname: %q is not a domain name", e.CNAME)
		}
		n.CNAME = strings.ToLower(dns.Fqdn(e.CNAME))
	}
	if len(n.V4)+len(n.V6) == 0 && n.CNAME == "" {
		return n, errors.New("field ipv4/ipv6: the node has no address and no cname")
	}
	if strings.TrimSpace(e.Country) == "" {
		return n, errors.New("field country: missing; country is required, an ISO 3166-1 alpha-2 code such as CN")
	}
	var err error
	if n.Country, n.Continent, n.Province, err = geo.NormalizePlace(e.Country, e.Province); err != nil {
		return n, fmt.Errorf("field %w", err)
	}
	n.City = e.City
	n.ISP = geo.NormalizeCarrier(e.ISP)
	if (e.Lat == nil) != (e.Lon == nil) || e.Lat == nil && n.CNAME == "" {
		return n, errors.New("field lat/lon: coordinates are required (only a cname node may leave both out)")
	}
	if e.Lat == nil {
		// Distance plays no part for it.
		n.NoCoords = true
		return n, buildRest(e, &n)
	}
	if lat := *e.Lat; math.IsNaN(lat) || lat < -90 || lat > 90 {
		return n, fmt.Errorf("field lat: %v is outside -90..90", lat)
	}
	if lon := *e.Lon; math.IsNaN(lon) || lon < -180 || lon > 180 {
		return n, fmt.Errorf("field lon: %v is outside -180..180", lon)
	}
	n.Lat, n.Lon = *e.Lat, *e.Lon
	return n, buildRest(e, &n)
}

// buildRest reads a node's cost, load and weight.
func buildRest(e *nodeEntry, n *Node) error {
	if e.Cost != nil {
		if c := *e.Cost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return fmt.Errorf("field cost: %v must be >= 0", c)
		}
		n.Cost = *e.Cost
	}
	if e.Load != nil {
		if l := *e.Load; math.IsNaN(l) || l < 0 || l > 1 {
			return fmt.Errorf("field load: %v is outside 0..1", l)
		}
		n.Load = *e.Load
	}
	n.Weight = 1
	if e.Weight != nil {
		if w := *e.Weight; math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
			return fmt.Errorf("field weight: %v must be > 0", w)
		}
		n.Weight = *e.Weight
	}
	return nil
}

// Index returns the index of the node with that id.
func (t *Table) Index(id string) (int, bool) {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return i, true
		}
	}
	return 0, false
}

// sum fingerprints a part of the table by its canonical JSON.
func sum(v any) [32]byte {
	b, _ := json.Marshal(v) // maps are sorted, pointers followed
	return sha256.Sum256(b)
}

// svcParams reads an HTTPS record's SvcParams with the dns library's
// parser; the address hints are the decision's, not the table's.
func svcParams(m map[string]any) ([]dns.SVCBKeyValue, error) {
	var b strings.Builder
	b.WriteString(". 1 IN HTTPS 1 .")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "ipv4hint" || k == "ipv6hint" {
			return nil, fmt.Errorf("%s: the hints are the answer's addresses, they cannot be set", k)
		}
		var vals []string
		switch v := m[k].(type) {
		case []any:
			for _, x := range v {
				vals = append(vals, fmt.Sprint(x))
			}
		case nil:
		default:
			vals = append(vals, fmt.Sprint(v))
		}
		for _, v := range vals {
			if strings.ContainsAny(v, " \t\n\"=,") {
				return nil, fmt.Errorf("%s: %q has a character the record cannot hold", k, v)
			}
		}
		b.WriteString(" " + k)
		if len(vals) > 0 {
			b.WriteString("=" + strings.Join(vals, ","))
		}
	}
	rr, err := dns.NewRR(b.String())
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "dns: "))
	}
	return rr.(*dns.HTTPS).Value, nil
}
