// Package ip2regiongen writes small ip2region xdb databases, for test
// fixtures and demos. Output is deterministic: the same input gives the
// same bytes, the bytes ip2region's own maker writes for the same
// segments (it also merges adjacent segments of one region; this does
// not).
package ip2regiongen

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/internal/atomicfile"
)

// Meta describes the database to build.
type Meta struct {
	Structure int    // ip2region.Structure3 (0 means it) or Structure2 (IPv4 only)
	IPVersion int    // 4 or 6
	Created   uint32 // unix seconds
}

// Rec is one segment: an inclusive range of addresses of the file's family
// and its region, e.g. "中国|广东省|深圳市|电信|CN". Segments must not
// overlap.
type Rec struct {
	Start, End netip.Addr
	Region     string
}

// PrefixRec is the Rec of a network.
func PrefixRec(p netip.Prefix, region string) Rec {
	p = p.Masked()
	return Rec{Start: p.Addr(), End: lastAddr(p), Region: region}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Write builds the database and replaces path with it atomically.
func Write(path string, m Meta, recs []Rec) error {
	b, err := Build(m, recs)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b); err != nil {
		return fmt.Errorf("ip2regiongen: %w", err)
	}
	return nil
}

// Build returns the bytes of the database.
func Build(m Meta, recs []Rec) ([]byte, error) {
	if m.Structure == 0 {
		m.Structure = ip2region.Structure3
	}
	width := 4
	switch {
	case m.Structure == ip2region.Structure2 && m.IPVersion == 4:
	case m.Structure == ip2region.Structure3 && m.IPVersion == 4:
	case m.Structure == ip2region.Structure3 && m.IPVersion == 6:
		width = 16
	default:
		return nil, fmt.Errorf("ip2regiongen: structure %d with IPv%d: want structure 3 with IPv4 or IPv6, or structure 2 with IPv4", m.Structure, m.IPVersion)
	}
	if len(recs) == 0 {
		return nil, errors.New("ip2regiongen: no segments")
	}
	sorted := slices.Clone(recs)
	for i, r := range sorted {
		if !r.Start.IsValid() || !r.End.IsValid() || r.Start.Is4In6() || r.End.Is4In6() ||
			len(r.Start.AsSlice()) != width || len(r.End.AsSlice()) != width {
			return nil, fmt.Errorf("ip2regiongen: segment %d (%s-%s): want plain IPv%d addresses", i+1, r.Start, r.End, m.IPVersion)
		}
		if r.End.Less(r.Start) {
			return nil, fmt.Errorf("ip2regiongen: segment %d (%s-%s) ends before it starts", i+1, r.Start, r.End)
		}
		if len(r.Region) > math.MaxUint16 {
			return nil, fmt.Errorf("ip2regiongen: segment %d: region is %d bytes, the limit is %d", i+1, len(r.Region), math.MaxUint16)
		}
	}
	slices.SortStableFunc(sorted, func(a, b Rec) int { return a.Start.Compare(b.Start) })
	for i := 1; i < len(sorted); i++ {
		if !sorted[i-1].End.Less(sorted[i].Start) {
			return nil, fmt.Errorf("ip2regiongen: segments %s-%s and %s-%s overlap", sorted[i-1].Start, sorted[i-1].End, sorted[i].Start, sorted[i].End)
		}
	}

	b := make([]byte, ip2region.MinSize)
	le := binary.LittleEndian
	le.PutUint16(b[0:], uint16(m.Structure))
	le.PutUint16(b[2:], 1) // vector index policy
	le.PutUint32(b[4:], m.Created)
	if m.Structure == ip2region.Structure3 {
		le.PutUint16(b[16:], uint16(m.IPVersion))
		le.PutUint16(b[18:], 4)
	}
	// Regions, each stored once, in the order of first use.
	ptr := map[string]uint32{}
	for _, r := range sorted {
		if _, ok := ptr[r.Region]; !ok && r.Region != "" {
			ptr[r.Region] = uint32(len(b))
			b = append(b, r.Region...)
		}
	}
	segSize := ip2region.SegmentSize4
	if width == 16 {
		segSize = ip2region.SegmentSize6
	}
	first := uint32(len(b))
	for _, r := range sorted {
		for _, s := range split(r) {
			off := uint32(len(b))
			var e []byte
			if width == 4 {
				// IPv4 addresses are stored little-endian.
				s4, e4 := s.Start.As4(), s.End.As4()
				e = le.AppendUint32(e, binary.BigEndian.Uint32(s4[:]))
				e = le.AppendUint32(e, binary.BigEndian.Uint32(e4[:]))
			} else {
				e = append(e, s.Start.AsSlice()...)
				e = append(e, s.End.AsSlice()...)
			}
			e = le.AppendUint16(e, uint16(len(r.Region)))
			e = le.AppendUint32(e, ptr[r.Region])
			b = append(b, e...)
			c := ip2region.HeaderSize + cell(s.Start)*8
			if le.Uint32(b[c:]) == 0 {
				le.PutUint32(b[c:], off)
			}
			le.PutUint32(b[c+4:], off+uint32(segSize))
		}
	}
	if uint64(len(b)) > math.MaxUint32 {
		return nil, errors.New("ip2regiongen: database over 4 GiB")
	}
	le.PutUint32(b[8:], first)
	le.PutUint32(b[12:], uint32(len(b)-segSize))
	return b, nil
}

func cell(a netip.Addr) int {
	s := a.AsSlice()
	return int(s[0])<<8 | int(s[1])
}

// split cuts a segment at every change of its first two bytes: each index
// entry lies in one vector cell.
func split(r Rec) []Rec {
	var out []Rec
	for s := r.Start; ; {
		b := s.AsSlice()
		for i := 2; i < len(b); i++ {
			b[i] = 0xff
		}
		end, _ := netip.AddrFromSlice(b)
		if !end.Less(r.End) {
			return append(out, Rec{Start: s, End: r.End, Region: r.Region})
		}
		out = append(out, Rec{Start: s, End: end, Region: r.Region})
		s = end.Next()
	}
}

// Region joins fields with '|', writing "0" for an empty one as ip2region
// does.
func Region(fields ...string) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = cmp.Or(f, "0")
	}
	return strings.Join(out, "|")
}
