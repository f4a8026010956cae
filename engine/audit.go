package engine

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/carrierlist"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
)

// Bounds of an audit's inputs.
const (
	MaxAuditUnits     = 1 << 22 // /24s (/48s) audited at most
	maxUnitsPerPrefix = 1 << 16 // a /8 at most is split into /24s
	maxAuditLine      = 4096
)

// Thresholds of the quality check: a range is flagged when its round trip
// to its province's nodes is at least QualityRatio times, and QualityMinMs
// more than, the one to another province's.
const (
	QualityRatio = 2.0
	QualityMinMs = 20.0
)

// AuditConfig says what an audit compares.
type AuditConfig struct {
	Inputs  []string // files of addresses or prefixes, one a line; "-" is Stdin
	Stdin   io.Reader
	Sample  int    // with no Inputs: this many /24s (/48s) of the carrier lists' own networks
	Quality string // CSV of cidr,node,rtt_ms measurements; "" none
}

// AuditSource is one source's answer for a unit.
type AuditSource struct {
	Province string `json:"province,omitempty"`
	Carrier  string `json:"carrier,omitempty"`
}

// String is PROVINCE/CARRIER, "-" for an unknown one.
func (s AuditSource) String() string {
	return cmp.Or(s.Province, "-") + "/" + cmp.Or(s.Carrier, "-")
}

// AuditGroup counts the units the server places in one province and
// carrier.
type AuditGroup struct {
	Province string `json:"province"`
	Carrier  string `json:"carrier"`
	Units    int    `json:"units"`
	// ProvinceCompared are the units two or more sources give a province;
	// ProvinceAgree those where all of them give the same one. Likewise
	// for the carrier.
	ProvinceCompared int `json:"province_compared"`
	ProvinceAgree    int `json:"province_agree"`
	CarrierCompared  int `json:"carrier_compared"`
	CarrierAgree     int `json:"carrier_agree"`
}

// AuditRange is adjacent units on which the sources disagree the same way.
type AuditRange struct {
	First  string                 `json:"first"`
	Last   string                 `json:"last"`
	Units  int                    `json:"units"`
	Fields []string               `json:"fields"`  // province, carrier
	Used   AuditSource            `json:"used"`    // what the server decides with
	UsedBy string                 `json:"used_by"` // its gslb/geo_source
	Says   map[string]AuditSource `json:"says"`
	// Odd is the one source the others (two or more) agree against, if
	// any.
	Odd string `json:"odd,omitempty"`

	first, last netip.Addr
}

// QualityFlag is a range whose round trip to its province's nodes is far
// above the one to another province's.
type QualityFlag struct {
	CIDR          string  `json:"cidr"`
	Province      string  `json:"province"`
	OwnNode       string  `json:"own_node"`
	OwnRTTMs      float64 `json:"own_rtt_ms"`
	OtherProvince string  `json:"other_province"`
	OtherNode     string  `json:"other_node"`
	OtherRTTMs    float64 `json:"other_rtt_ms"`
}

// AuditReport is what Audit found.
type AuditReport struct {
	Sources       []string      `json:"sources"`
	Units         int           `json:"units"`
	Groups        []AuditGroup  `json:"groups"`
	Disagreements []AuditRange  `json:"disagreements"`
	Quality       []QualityFlag `json:"quality,omitempty"`
	// Overrides are draft entries for the ranges where the other sources
	// agree against the one the server decides with.
	Overrides []overrides.EntryYAML `json:"overrides,omitempty"`
}

// unit is one audited /24 (/48) or address.
type unit struct {
	addr netip.Addr
	key  netip.Prefix
}

// Audit compares the block's sources (MaxMind, .ipdb, ip2region, carrier
// lists) over the units ac names.
func (e *Engine) Audit(ctx context.Context, ac AuditConfig) (*AuditReport, error) {
	loc := e.ctl.Locator()
	db := loc.DB()
	carriers := e.ctl.View().Table.Carriers
	lists := loc.CarrierLists()
	var units []unit
	var err error
	switch {
	case len(ac.Inputs) > 0:
		units, err = readUnits(ac.Inputs, ac.Stdin)
	case ac.Sample > 0:
		if lists == nil {
			return nil, errors.New("audit: -sample needs carrier_lists in the block (or give addresses)")
		}
		units, err = sampleLists(lists, ac.Sample, e.ctl.Options().MaxFileSize)
	default:
		return nil, errors.New("audit: no addresses: give files of addresses or prefixes, or -sample N")
	}
	if err != nil {
		return nil, err
	}
	r := &AuditReport{Units: len(units), Groups: []AuditGroup{}, Disagreements: []AuditRange{}}
	if db != nil {
		r.Sources = append(r.Sources, geo.BaseStep())
		for _, m := range db.Info() {
			if name := geo.FormatOf(m.Kind).Explain; !slices.Contains(r.Sources, name) {
				r.Sources = append(r.Sources, name)
			}
		}
	}
	if lists != nil {
		r.Sources = append(r.Sources, "list")
	}
	groups := map[[2]string]*AuditGroup{}
	var open *AuditRange
	flush := func() {
		if open != nil {
			r.Disagreements = append(r.Disagreements, *open)
			open = nil
		}
	}
	for _, u := range units {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		says := map[string]AuditSource{}
		if db != nil {
			for _, said := range db.Explain(u.addr) {
				carriers.Apply(&said.Location)
				put(says, said.Name, said.Location)
			}
		}
		if lists != nil {
			if i, _, ok := lists.Lookup(u.addr); ok {
				says["list"] = AuditSource{Carrier: carriers.Carrier(0, lists.List(i).Carrier)}
			}
		}
		res := loc.Locate(ctx, u.addr)
		used := AuditSource{Province: res.Province, Carrier: res.ISP}
		g := groups[[2]string{used.Province, used.Carrier}]
		if g == nil {
			g = &AuditGroup{Province: used.Province, Carrier: used.Carrier}
			groups[[2]string{used.Province, used.Carrier}] = g
		}
		g.Units++
		pc, pa := agree(says, func(s AuditSource) string { return s.Province })
		cc, ca := agree(says, func(s AuditSource) string { return s.Carrier })
		if pc {
			g.ProvinceCompared++
			if pa {
				g.ProvinceAgree++
			}
		}
		if cc {
			g.CarrierCompared++
			if ca {
				g.CarrierAgree++
			}
		}
		if (!pc || pa) && (!cc || ca) {
			flush()
			continue
		}
		var fields []string
		if pc && !pa {
			fields = append(fields, "province")
		}
		if cc && !ca {
			fields = append(fields, "carrier")
		}
		if open != nil && u.addr.Is4() && open.last.Is4() && u.key.Bits() == 24 && open.last.Next() == u.addr &&
			open.Used == used && sameSays(open.Says, says) {
			open.last, open.Last = lastOf(u.key), lastOf(u.key).String()
			open.Units++
			continue
		}
		flush()
		open = &AuditRange{first: u.key.Addr(), last: lastOf(u.key), Units: 1, Fields: fields, Used: used,
			UsedBy: res.Source.String(), Says: says, Odd: odd(says)}
		open.First, open.Last = open.first.String(), open.last.String()
	}
	flush()
	for _, g := range groups {
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(a, b AuditGroup) int {
		return cmp.Or(cmp.Compare(b.Units, a.Units), cmp.Compare(a.Province, b.Province), cmp.Compare(a.Carrier, b.Carrier))
	})
	for _, d := range r.Disagreements {
		if ov, ok := draftOverride(d, carriers); ok {
			r.Overrides = append(r.Overrides, ov)
		}
	}
	if ac.Quality != "" {
		if r.Quality, err = e.auditQuality(ctx, ac.Quality); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// put notes what a database says, when it places the address in China:
// the other countries are MaxMind's alone.
func put(says map[string]AuditSource, name string, l geo.Location) {
	if l.Country != "CN" || l.Province == "" && l.ISP == "" {
		return
	}
	says[name] = AuditSource{Province: l.Province, Carrier: l.ISP}
}

// agree reports whether two or more sources give the field (compared) and
// whether they all give the same value.
func agree(says map[string]AuditSource, field func(AuditSource) string) (compared, same bool) {
	v, n := "", 0
	same = true
	for _, s := range says {
		f := field(s)
		if f == "" {
			continue
		}
		if n > 0 && f != v {
			same = false
		}
		v = f
		n++
	}
	return n >= 2, same
}

func sameSays(a, b map[string]AuditSource) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// odd is the one source the others, two or more, agree against on every
// field it gives; "" when there is none.
func odd(says map[string]AuditSource) string {
	found := ""
	for name, s := range says {
		others, n := AuditSource{}, 0
		consistent, differs := true, false
		for other, o := range says {
			if other == name {
				continue
			}
			for _, f := range []struct {
				mine, theirs string
				acc          *string
			}{
				{s.Province, o.Province, &others.Province}, {s.Carrier, o.Carrier, &others.Carrier}} {
				if f.theirs == "" {
					continue
				}
				if *f.acc != "" && *f.acc != f.theirs {
					consistent = false
				}
				*f.acc = f.theirs
			}
			n++
		}
		if !consistent || n < 2 {
			continue
		}
		if s.Province != "" && others.Province != "" && s.Province != others.Province ||
			s.Carrier != "" && others.Carrier != "" && s.Carrier != others.Carrier {
			differs = true
		}
		if differs {
			if found != "" {
				return ""
			}
			found = name
		}
	}
	return found
}

// draftOverride is the correction of a range where the others agree
// against the source the server decides with.
func draftOverride(d AuditRange, carriers *geo.Carriers) (overrides.EntryYAML, bool) {
	if d.Odd == "" {
		return overrides.EntryYAML{}, false
	}
	want := AuditSource{}
	var names []string
	for name, s := range d.Says {
		if name == d.Odd {
			continue
		}
		names = append(names, name)
		want.Province = cmp.Or(want.Province, s.Province)
		want.Carrier = cmp.Or(want.Carrier, s.Carrier)
	}
	want.Province = cmp.Or(want.Province, d.Used.Province)
	want.Carrier = cmp.Or(want.Carrier, d.Used.Carrier)
	if want == d.Used || want.Province == "" {
		return overrides.EntryYAML{}, false // the server already decides with the others' answer
	}
	slices.Sort(names)
	var others []string
	for _, n := range names {
		others = append(others, n+" "+d.Says[n].String())
	}
	note := fmt.Sprintf("audit draft: %s; against them %s %s, and the server uses %s (%s); review before use",
		strings.Join(others, ", "), d.Odd, d.Says[d.Odd], d.Used, d.UsedBy)
	isp := want.Carrier
	if !carriers.Known(isp) {
		if want.Province == d.Used.Province {
			return overrides.EntryYAML{}, false // nothing an overrides file can say
		}
		isp = "" // an overrides file names only carriers the table knows
	}
	e := overrides.EntryYAML{Location: &overrides.LocationYAML{Country: "CN", Province: want.Province, ISP: isp}, Note: note}
	cidrs := rangeCIDRs(d.first, d.last)
	if len(cidrs) == 1 {
		e.CIDR = cidrs[0]
	} else {
		e.CIDRs = cidrs
	}
	return e, true
}

// rangeCIDRs covers first..last with the fewest prefixes.
func rangeCIDRs(first, last netip.Addr) []string {
	var out []string
	for first.IsValid() && first.Compare(last) <= 0 {
		bits := first.BitLen()
		for bits > 0 {
			p := netip.PrefixFrom(first, bits-1).Masked()
			if p.Addr() != first || lastOf(p).Compare(last) > 0 {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(first, bits)
		out = append(out, p.String())
		end := lastOf(p)
		if end == last {
			break
		}
		first = end.Next()
	}
	return out
}

// lastOf is the last address of p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// unitsOf splits p into /24s (/48s); an address or a longer prefix is one
// unit of its own.
func unitsOf(p netip.Prefix, add func(unit) error) error {
	p = p.Masked()
	key := 24
	if p.Addr().Is6() {
		key = 48
	}
	if p.Bits() >= key {
		return add(unit{addr: p.Addr(), key: p})
	}
	if 1<<(key-p.Bits()) > maxUnitsPerPrefix || key-p.Bits() > 30 {
		return fmt.Errorf("%s is wider than %d /%d units", p, maxUnitsPerPrefix, key)
	}
	n := 1 << (key - p.Bits())
	a := p.Addr()
	for range n {
		k := netip.PrefixFrom(a, key)
		if err := add(unit{addr: a, key: k}); err != nil {
			return err
		}
		a = lastOf(k).Next()
	}
	return nil
}

// readUnits reads addresses and prefixes, one a line ('#' comments; the
// first field of a line counts), sorted and deduplicated.
func readUnits(paths []string, stdin io.Reader) ([]unit, error) {
	var units []unit
	add := func(u unit) error {
		if len(units) >= MaxAuditUnits {
			return fmt.Errorf("more than %d units", MaxAuditUnits)
		}
		units = append(units, u)
		return nil
	}
	for _, path := range paths {
		var rd io.Reader
		if path == "-" {
			rd = stdin
		} else {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			defer f.Close()
			rd = f
		}
		sc := bufio.NewScanner(rd)
		sc.Buffer(make([]byte, 0, maxAuditLine), maxAuditLine)
		line := 0
		for sc.Scan() {
			line++
			s, _, _ := strings.Cut(sc.Text(), "#")
			fields := strings.Fields(s)
			if len(fields) == 0 {
				continue
			}
			p, err := overrides.ParsePrefix(fields[0])
			if a, aerr := netip.ParseAddr(fields[0]); err != nil && aerr == nil && a.Zone() == "" {
				a = a.Unmap()
				p, err = netip.PrefixFrom(a, a.BitLen()), nil
			}
			if err != nil {
				return nil, fmt.Errorf("audit: %s:%d: %q is not an address or a prefix", path, line, fields[0])
			}
			if err := unitsOf(p, add); err != nil {
				return nil, fmt.Errorf("audit: %s:%d: %w", path, line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("audit: %s:%d: %w", path, line+1, err)
		}
	}
	return sortUnits(units), nil
}

func sortUnits(units []unit) []unit {
	slices.SortFunc(units, func(a, b unit) int { return cmp.Or(a.addr.Compare(b.addr), cmp.Compare(a.key.Bits(), b.key.Bits())) })
	return slices.CompactFunc(units, func(a, b unit) bool { return a.addr == b.addr })
}

// sampleLists picks n /24s (an IPv6 list's networks' first /48s) evenly
// from the carrier lists' own networks.
func sampleLists(set *carrierlist.Set, n int, limit int64) ([]unit, error) {
	var prefixes []netip.Prefix
	for _, l := range set.Lists() {
		b, err := yamlfile.ReadFile(l.Path, limit)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		ps, err := carrierlist.Parse(l.Path, b)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for _, p := range ps {
			prefixes = append(prefixes, p.Prefix)
		}
	}
	count := func(p netip.Prefix) int {
		if p.Addr().Is4() && p.Bits() < 24 {
			return 1 << (24 - p.Bits())
		}
		return 1
	}
	total := 0
	for _, p := range prefixes {
		total += count(p)
	}
	n = min(n, total, MaxAuditUnits)
	if n == 0 {
		return nil, nil
	}
	stride := float64(total) / float64(n)
	var units []unit
	next, seen := 0.0, 0
	for _, p := range prefixes {
		c := count(p)
		for next < float64(seen+c) && len(units) < n {
			i := int(next) - seen
			a := p.Masked().Addr()
			if c > 1 {
				v := a.As4()
				x := (uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8) + uint32(i)<<8
				a = netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), 0})
			}
			bits := 24
			if a.Is6() {
				bits = 48
			}
			if p.Bits() > bits {
				bits = p.Bits()
			}
			units = append(units, unit{addr: a, key: netip.PrefixFrom(a, bits).Masked()})
			next += stride
		}
		seen += c
	}
	return sortUnits(units), nil
}

// auditQuality reads measurements (cidr,node,rtt_ms) and flags the ranges
// whose best round trip to their province's nodes is far above the best
// to another province's.
func (e *Engine) auditQuality(ctx context.Context, path string) ([]QualityFlag, error) {
	b, err := yamlfile.ReadFile(path, e.ctl.Options().MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("audit: quality: %w", err)
	}
	t := e.ctl.View().Table
	province := map[string]string{}
	for _, n := range t.Nodes {
		province[n.ID] = n.Province
	}
	type best struct {
		node string
		rtt  float64
	}
	byRange := map[netip.Prefix]map[string]best{} // province -> best node
	var order []netip.Prefix
	rd := csv.NewReader(strings.NewReader(string(b)))
	rd.Comment = '#'
	rd.FieldsPerRecord = 3
	rd.TrimLeadingSpace = true
	for first := true; ; first = false {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("audit: quality: %s: %w", path, err)
		}
		line, _ := rd.FieldPos(0)
		if first && rec[0] == "cidr" {
			continue
		}
		p, err := overrides.ParsePrefix(rec[0])
		if err != nil {
			return nil, fmt.Errorf("audit: quality: %s:%d: field cidr: %q is not a prefix", path, line, rec[0])
		}
		prov, ok := province[rec[1]]
		if !ok {
			return nil, fmt.Errorf("audit: quality: %s:%d: field node: %q is not in the node table", path, line, rec[1])
		}
		rtt, err := strconv.ParseFloat(rec[2], 64)
		if err != nil || rtt < 0 || math.IsInf(rtt, 0) || math.IsNaN(rtt) {
			return nil, fmt.Errorf("audit: quality: %s:%d: field rtt_ms: %q is not a round trip in ms", path, line, rec[2])
		}
		m := byRange[p]
		if m == nil {
			m = map[string]best{}
			byRange[p] = m
			order = append(order, p)
		}
		if cur, ok := m[prov]; !ok || rtt < cur.rtt {
			m[prov] = best{rec[1], rtt}
		}
	}
	var flags []QualityFlag
	for _, p := range order {
		res := e.ctl.Locator().Locate(ctx, p.Addr())
		own, ok := byRange[p][res.Province]
		if res.Province == "" || !ok {
			continue
		}
		var other string
		var ob best
		for prov, b := range byRange[p] {
			if prov != res.Province && (other == "" || b.rtt < ob.rtt || b.rtt == ob.rtt && prov < other) {
				other, ob = prov, b
			}
		}
		if other != "" && own.rtt >= QualityRatio*ob.rtt && own.rtt-ob.rtt >= QualityMinMs {
			flags = append(flags, QualityFlag{CIDR: p.String(), Province: res.Province, OwnNode: own.node, OwnRTTMs: own.rtt,
				OtherProvince: other, OtherNode: ob.node, OtherRTTMs: ob.rtt})
		}
	}
	return flags, nil
}
