// Package carrierlist reads carrier CIDR lists built from BGP (the
// china-operator-ip style: one CIDR a line, IPv4 and IPv6, '#' comments),
// whose file names say the carrier, into an immutable structure of sorted
// disjoint ranges: the longest prefix wins across lists, a network that
// several carriers list has no list answer, and a lookup is a binary search
// that allocates nothing.
package carrierlist

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gslbdns/gslb/internal/u128"
	"github.com/gslbdns/gslb/internal/yamlfile"
)

// DefaultMaxSize is a list file's size limit when Load is given none.
const DefaultMaxSize = yamlfile.DefaultMaxSize

// MaxLists is how many lists a Set holds at most.
const MaxLists = 1 << 10

// carrierOf maps china-operator-ip's list names to our carriers. A name
// not here is its own carrier, for the node table's carriers: to map.
var carrierOf = map[string]string{
	"chinanet": "telecom", // China Telecom
	"unicom":   "unicom",
	"cmcc":     "mobile",
	"crtc":     "mobile", // China Railcom (铁通), part of China Mobile
	"cernet":   "edu",
	"cstnet":   "cstnet", // China Science and Technology Network (科技网)
	"drpeng":   "drpeng", // Dr. Peng (鹏博士)
	"googlecn": "googlecn",
}

// notCarriers are names of lists that say no carrier: china-operator-ip's
// lists of all of China. A directory's are skipped, a named one refused.
var notCarriers = map[string]bool{"china": true, "china6": true, "china46": true}

// unionOf is the list names a china-operator-ip NAME46 list is the union
// of: a directory that holds one of them skips it, as it would count every
// network twice.
func unionOf(name string) []string {
	base, ok := strings.CutSuffix(name, "46")
	if !ok || base == "" {
		return nil
	}
	return []string{base, base + "6"}
}

// NameOf is a list's name from its path: the base name without the
// extension, lower-cased.
func NameOf(path string) string {
	b := filepath.Base(path)
	return strings.ToLower(strings.TrimSuffix(b, filepath.Ext(b)))
}

// CarrierOf is the carrier a list's name says: china-operator-ip's IPv6
// and both-family lists (chinanet6, chinanet46) are their IPv4 lists'
// carrier; a name the table does not know is its own carrier.
func CarrierOf(name string) string {
	name = strings.ToLower(name)
	if c, ok := carrierOf[name]; ok {
		return c
	}
	for _, suffix := range []string{"46", "6"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if c, ok := carrierOf[base]; ok {
				return c
			}
		}
	}
	return name
}

// List is one file of a Set.
type List struct {
	Name    string // e.g. "chinanet6"
	Path    string
	Carrier string // e.g. "telecom"
	Len     int    // prefixes
}

// Prefix is one line of a list.
type Prefix struct {
	Prefix netip.Prefix // masked; IPv4 plain
	Line   int
}

// Parse reads a list's lines: a CIDR each, '#' starts a comment, blank
// lines are skipped. An IPv4-mapped IPv6 prefix counts as IPv4. Errors name
// name, the line and the text.
func Parse(name string, b []byte) ([]Prefix, error) {
	var out []Prefix
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("carrierlist: %s:%d: %q is not a CIDR", name, line, s)
		}
		if p.Addr().Zone() != "" {
			return nil, fmt.Errorf("carrierlist: %s:%d: %q has a zone", name, line, s)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("carrierlist: %s:%d: %s has host bits set (did you mean %s?)", name, line, p, p.Masked())
		}
		if p.Addr().Is4In6() { // masked: at least /96
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, Prefix{Prefix: p, Line: line})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("carrierlist: %s:%d: line longer than 4096 bytes", name, line+1)
		}
		return nil, fmt.Errorf("carrierlist: %s: %w", name, err)
	}
	return out, nil
}

// Load reads the lists paths name. A directory stands for its *.txt
// files, but the lists of all of China (china.txt, china6.txt,
// china46.txt) and a NAME46.txt beside NAME.txt or NAME6.txt (their
// union); other files (stat, index.html, LICENSE) are not lists. A file
// over maxSize bytes (DefaultMaxSize when <= 0) is refused before it is
// read. A prefix in the lists of several carriers has no list answer (see
// Build).
func Load(paths []string, maxSize int64) (*Set, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("carrierlist: %w", err)
		}
		if !fi.IsDir() {
			if notCarriers[NameOf(p)] {
				return nil, fmt.Errorf("carrierlist: %s lists all of China, not a carrier", p)
			}
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("carrierlist: %w", err)
		}
		present := map[string]bool{}
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".txt" {
				present[NameOf(e.Name())] = true
			}
		}
		n := 0
		for _, e := range ents { // sorted by name
			name := e.Name()
			if strings.HasPrefix(name, ".") || filepath.Ext(name) != ".txt" || notCarriers[NameOf(name)] ||
				slices.ContainsFunc(unionOf(NameOf(name)), func(n string) bool { return present[n] }) {
				continue
			}
			if fi, err := os.Stat(filepath.Join(p, name)); err != nil || !fi.Mode().IsRegular() {
				continue // a link is followed; a directory or a dangling link is not a list
			}
			files = append(files, filepath.Join(p, name))
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("carrierlist: directory %s has no carrier list (*.txt)", p)
		}
	}
	lists := make([]Source, 0, len(files))
	for _, f := range files {
		b, err := yamlfile.ReadFile(f, maxSize)
		if err != nil {
			return nil, fmt.Errorf("carrierlist: %w", err)
		}
		ps, err := Parse(f, b)
		if err != nil {
			return nil, err
		}
		lists = append(lists, Source{List: List{Name: NameOf(f), Path: f, Carrier: CarrierOf(NameOf(f))}, Prefixes: ps})
	}
	return Build(lists)
}

// Source is a list and its prefixes, for Build.
type Source struct {
	List
	Prefixes []Prefix
}

// bounds are a prefix's first and last address.
func bounds(p netip.Prefix) (lo, hi u128.U128) {
	lo = u128.FromAddr(p.Addr())
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	hi = lo
	switch host := 128 - bits; {
	case host >= 64:
		hi = u128.U128{Hi: lo.Hi | (uint64(1)<<(host-64) - 1), Lo: ^uint64(0)}
	case host > 0:
		hi.Lo |= uint64(1)<<host - 1
	}
	return lo, hi
}

// Set is the lists' ranges. It is immutable and safe for concurrent use.
type Set struct {
	lists  []List
	t4, t6 table // IPv6 prefixes never hold IPv4 addresses
	digest uint64
	shared int // prefixes in the lists of several carriers
}

// sharedList marks a range of a prefix that several carriers list: a
// multi-homed network the lists cannot place in one carrier.
const sharedList = ^uint16(0)

// table is one family's disjoint ranges, sorted.
type table struct {
	lo, hi []u128.U128
	list   []uint16 // the list of each range
}

var digestSeed = maphash.MakeSeed()

// Build makes a Set of lists; the longest prefix wins. A prefix in the
// lists of several carriers (a multi-homed network) is no carrier's: a
// lookup there finds no list, and the databases decide.
func Build(lists []Source) (*Set, error) {
	if len(lists) > MaxLists {
		return nil, fmt.Errorf("carrierlist: %d lists, at most %d", len(lists), MaxLists)
	}
	var items []item
	s := &Set{}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	for i, l := range lists {
		l.List.Len = len(l.Prefixes)
		s.lists = append(s.lists, l.List)
		h.WriteString(l.Name + "\x00" + l.Carrier + "\x00")
		for _, p := range l.Prefixes {
			lo, hi := bounds(p.Prefix)
			b := p.Prefix.Bits()
			if p.Prefix.Addr().Is4() {
				b += 96
			}
			items = append(items, item{lo, hi, b, i, p.Line})
			h.WriteString(p.Prefix.String() + "\x00")
		}
		h.WriteString("\x01")
	}
	s.digest = h.Sum64()
	// Enclosing prefixes before the ones inside them.
	slices.SortStableFunc(items, func(a, b item) int {
		if a.lo != b.lo {
			if a.lo.Less(b.lo) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.bits, b.bits)
	})
	// Drop repeats within a carrier's lists; a prefix in two carriers'
	// lists is no carrier's.
	uniq := items[:0]
	for _, it := range items {
		if n := len(uniq); n > 0 && uniq[n-1].lo == it.lo && uniq[n-1].bits == it.bits {
			prev := &uniq[n-1]
			if prev.list != int(sharedList) && lists[prev.list].Carrier != lists[it.list].Carrier {
				prev.list = int(sharedList)
				s.shared++
			}
			continue
		}
		uniq = append(uniq, it)
	}
	var i4, i6 []item
	for _, it := range uniq {
		if it.lo.Hi == 0 && it.lo.Lo>>32 == 0xffff && it.bits >= 96 {
			i4 = append(i4, it)
		} else {
			i6 = append(i6, it)
		}
	}
	sweep(&s.t4, i4)
	sweep(&s.t6, i6)
	return s, nil
}

type item struct {
	lo, hi u128.U128
	bits   int
	list   int
	line   int
}

// sweep turns items, sorted with enclosing prefixes first, into t's
// disjoint ranges.
func sweep(s *table, items []item) {
	emit := func(lo, hi u128.U128, list int) {
		if hi.Less(lo) {
			return
		}
		if n := len(s.lo); n > 0 && int(s.list[n-1]) == list && s.hi[n-1].Next() == lo && s.hi[n-1] != u128.Max {
			s.hi[n-1] = hi
			return
		}
		s.lo, s.hi, s.list = append(s.lo, lo), append(s.hi, hi), append(s.list, uint16(list))
	}
	// A sweep with the stack of the prefixes around the current position:
	// the top, the innermost, owns it.
	var stack []item
	var pos u128.U128
	done := false // pos went past the last address
	pop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !done {
			emit(pos, top.hi, top.list)
			if top.hi == u128.Max {
				done = true
			} else {
				pos = top.hi.Next()
			}
		}
	}
	for _, it := range items {
		for len(stack) > 0 && stack[len(stack)-1].hi.Less(it.lo) {
			pop()
		}
		if len(stack) > 0 && pos.Less(it.lo) {
			emit(pos, it.lo.Prev(), stack[len(stack)-1].list)
		}
		pos, done = it.lo, false
		stack = append(stack, it)
	}
	for len(stack) > 0 {
		pop()
	}
}

// Lookup finds the list whose longest prefix holds addr. bits, in addr's
// own family, is the length of the largest block around addr that only
// that list holds, or, when no list holds addr (or the longest prefix is
// in several carriers' lists), where that holds: the answer holds for that
// block. It allocates nothing.
func (s *Set) Lookup(addr netip.Addr) (list int, bits int, ok bool) {
	if s == nil || !addr.IsValid() {
		return 0, 0, false
	}
	addr = addr.Unmap()
	a := u128.FromAddr(addr)
	s4 := addr.Is4()
	t := &s.t6
	if s4 {
		t = &s.t4
	}
	// The first range that ends at or after a.
	i, j := 0, len(t.lo)
	for i < j {
		m := int(uint(i+j) >> 1)
		if t.hi[m].Less(a) {
			i = m + 1
		} else {
			j = m
		}
	}
	var lo, hi u128.U128
	if i < len(t.lo) && !a.Less(t.lo[i]) {
		lo, hi, list, ok = t.lo[i], t.hi[i], int(t.list[i]), true
		if t.list[i] == sharedList {
			list, ok = 0, false
		}
	} else {
		// The gap between range i-1 and range i.
		lo, hi = u128.U128{}, u128.Max
		if i > 0 {
			lo = t.hi[i-1].Next()
		}
		if i < len(t.lo) {
			hi = t.lo[i].Prev()
		}
	}
	start := 0
	if s4 {
		start = 96
	}
	return list, u128.BlockBits(a, lo, hi, start) - start, ok
}

// List returns list i of the set.
func (s *Set) List(i int) List { return s.lists[i] }

// Lists are the set's lists, in the order they were given.
func (s *Set) Lists() []List {
	if s == nil {
		return nil
	}
	return slices.Clone(s.lists)
}

// Ranges is the number of disjoint ranges the lists make.
func (s *Set) Ranges() int {
	if s == nil {
		return 0
	}
	return len(s.t4.lo) + len(s.t6.lo)
}

// Shared is the number of prefixes in the lists of several carriers,
// which have no list answer.
func (s *Set) Shared() int {
	if s == nil {
		return 0
	}
	return s.shared
}

// Digest identifies the set's content: two sets with the same digest
// answer every address alike.
func (s *Set) Digest() uint64 {
	if s == nil {
		return 0
	}
	return s.digest
}
