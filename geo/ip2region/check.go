package ip2region

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"unicode/utf8"

	"github.com/gslbdns/gslb/internal/u128"
)

// check walks every segment index entry once and rejects what lookups must
// never meet: entries out of order or overlapping, an entry across two
// vector cells, regions outside the data section or overlapping each other,
// regions with too few fields or not UTF-8, and a vector index that does not
// point at exactly the entries of each cell. Regions are checked once each,
// so the time is linear in the file's size, plus a sort of the entries.
func (r *Reader) check() error {
	type span struct{ ptr, n uint32 }
	spans := make([]span, 0, r.n)
	var want [VectorCells][2]uint32
	var prevEnd u128.U128
	for i := range r.n {
		start, end, dlen, dptr := r.entry(i)
		at := func(format string, args ...any) error {
			return fmt.Errorf("segment %d (%s-%s): %s", i, r.addr(start), r.addr(end), fmt.Sprintf(format, args...))
		}
		if end.Less(start) {
			return at("ends before it starts")
		}
		if i > 0 && !prevEnd.Less(start) {
			return at("starts at or before the end of the previous segment (%s): segments must be sorted and disjoint", r.addr(prevEnd))
		}
		prevEnd = end
		c := r.cellOf(start)
		if r.cellOf(end) != c {
			return at("spans two vector index cells: a segment must not cross a /16 boundary")
		}
		off := r.first + uint32(i)*r.segSize
		if want[c][0] == 0 {
			want[c][0] = off
		}
		want[c][1] = off + r.segSize
		if dlen == 0 {
			continue
		}
		if dptr < MinSize || uint64(dptr)+uint64(dlen) > uint64(r.first) {
			return at("region at %d..%d is outside the data section %d..%d", dptr, uint64(dptr)+uint64(dlen), MinSize, r.first)
		}
		spans = append(spans, span{dptr, uint32(dlen)})
	}
	for c := range VectorCells {
		if s, e := r.cell(c); s != want[c][0] || e != want[c][1] {
			return fmt.Errorf("vector index cell %d.%d is %d..%d, but its segments are at %d..%d", c>>8, c&0xff, s, e, want[c][0], want[c][1])
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.ptr, b.ptr) })
	for i := 1; i < len(spans); i++ {
		if prev, sp := spans[i-1], spans[i]; sp != prev && sp.ptr < prev.ptr+prev.n {
			return fmt.Errorf("regions at %d (%d bytes) and %d (%d bytes) overlap", prev.ptr, prev.n, sp.ptr, sp.n)
		}
	}
	for i, sp := range spans {
		if i > 0 && sp == spans[i-1] {
			continue
		}
		raw := r.s[sp.ptr : sp.ptr+sp.n]
		if !utf8.ValidString(raw) {
			return fmt.Errorf("region at %d is not UTF-8: %q", sp.ptr, raw)
		}
		if _, ok := r.parse(raw); !ok {
			return fmt.Errorf("region at %d has fewer than %d '|'-separated fields: %q", sp.ptr, fields, raw)
		}
	}
	return nil
}

// addr formats an address of the file's family, for errors.
func (r *Reader) addr(a u128.U128) string {
	if !r.v6 {
		return netip.AddrFrom4([4]byte{byte(a.Lo >> 24), byte(a.Lo >> 16), byte(a.Lo >> 8), byte(a.Lo)}).String()
	}
	return netip.AddrFrom16(a.As16()).String()
}
