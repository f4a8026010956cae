// Package ip2region reads ip2region's xdb databases (structure 2, IPv4
// only, and structure 3, one file per address family): a 256-byte header, a
// 256×256 vector index of 8-byte cells by the address's first two bytes, the
// region strings, and sorted segment index entries of 14 (IPv4) or 38
// (IPv6) bytes. The whole file is checked at open, in time linear in its
// size (plus a sort); lookups allocate nothing and return strings that point
// into the file's buffer.
package ip2region

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"unsafe"

	"github.com/gslbdns/gslb/internal/u128"
)

// Layout constants of the format.
const (
	HeaderSize  = 256
	VectorCells = 256 * 256
	VectorSize  = VectorCells * 8
	MinSize     = HeaderSize + VectorSize

	SegmentSize4 = 4 + 4 + 2 + 4
	SegmentSize6 = 16 + 16 + 2 + 4
)

// Structure versions: 2 knows only IPv4 and regions
// country|area|province|city|isp; 3 adds IPv6 files and has regions
// country|province|city|isp|iso2.
const (
	Structure2 = 2
	Structure3 = 3
)

// Reader looks up addresses in one xdb file. It is immutable and safe for
// concurrent use.
type Reader struct {
	name      string
	b         []byte
	s         string // b as a string, so that region fields are substrings
	structure int
	v6        bool
	created   uint32
	segSize   uint32
	first     uint32 // offset of the first segment index entry
	n         int    // segment index entries
}

// Open reads the whole file into memory.
func Open(path string) (*Reader, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ip2region: %w", err)
	}
	return FromBytes(path, b)
}

// FromBytes uses b, which must not change afterwards, as the file named name
// (used in errors only).
func FromBytes(name string, b []byte) (*Reader, error) {
	r, err := parseHeader(name, b)
	if err != nil {
		return nil, formatErr(name, "%v", err)
	}
	if err := r.check(); err != nil {
		return nil, formatErr(name, "%v", err)
	}
	return r, nil
}

func formatErr(name, format string, args ...any) error {
	return fmt.Errorf("ip2region: %s: %s", name, fmt.Sprintf(format, args...))
}

func parseHeader(name string, b []byte) (*Reader, error) {
	if len(b) < MinSize {
		return nil, fmt.Errorf("file too short (%d bytes) to hold the header and the vector index (%d bytes): not an xdb file", len(b), MinSize)
	}
	if uint64(len(b)) > 1<<32 {
		return nil, fmt.Errorf("file of %d bytes is over the 4 GiB the format's pointers reach", len(b))
	}
	r := &Reader{name: name, b: b, s: unsafe.String(&b[0], len(b)), segSize: SegmentSize4}
	le := binary.LittleEndian
	r.structure = int(le.Uint16(b[0:]))
	switch r.structure {
	case Structure2:
	case Structure3:
		switch v := le.Uint16(b[16:]); v {
		case 4:
		case 6:
			r.v6, r.segSize = true, SegmentSize6
		default:
			return nil, fmt.Errorf("header ip version %d: want 4 or 6", v)
		}
		if p := le.Uint16(b[18:]); p != 4 {
			return nil, fmt.Errorf("header runtime pointer size %d: want 4", p)
		}
	default:
		return nil, fmt.Errorf("header structure version %d: want %d or %d (not an xdb file?)", r.structure, Structure2, Structure3)
	}
	if p := le.Uint16(b[2:]); p != 1 && p != 2 {
		return nil, fmt.Errorf("header index policy %d: want 1 (vector) or 2 (btree)", p)
	}
	r.created = le.Uint32(b[4:])
	start, end := le.Uint32(b[8:]), le.Uint32(b[12:])
	switch {
	case start < MinSize || end < start:
		return nil, fmt.Errorf("header segment index %d..%d: want MinSize %d <= start <= end", start, end, MinSize)
	case (end-start)%r.segSize != 0:
		return nil, fmt.Errorf("header segment index %d..%d is not a whole number of %d-byte entries", start, end, r.segSize)
	case uint64(end)+uint64(r.segSize) != uint64(len(b)):
		return nil, fmt.Errorf("header segment index ends at %d, but the file has %d bytes (truncated or padded)", uint64(end)+uint64(r.segSize), len(b))
	}
	r.first, r.n = start, int((end-start)/r.segSize)+1
	return r, nil
}

// IPVersion is 4 or 6: the family of the addresses the file holds.
func (r *Reader) IPVersion() int {
	if r.v6 {
		return 6
	}
	return 4
}

// Structure is the file's structure version, Structure2 or Structure3.
func (r *Reader) Structure() int { return r.structure }

// Created is when the file was made, in unix seconds.
func (r *Reader) Created() int64 { return int64(r.created) }

// Len is the number of segment index entries.
func (r *Reader) Len() int { return r.n }

// entry reads segment index entry i: start, end, region length and
// offset.
func (r *Reader) entry(i int) (start, end u128.U128, dlen uint16, dptr uint32) {
	p := int(r.first) + i*int(r.segSize)
	e := r.b[p : p+int(r.segSize)]
	le := binary.LittleEndian
	if r.v6 {
		start = u128.From16([16]byte(e[0:16]))
		end = u128.From16([16]byte(e[16:32]))
		return start, end, le.Uint16(e[32:]), le.Uint32(e[34:])
	}
	// IPv4 addresses are little-endian, unlike IPv6 ones.
	start.Lo, end.Lo = uint64(le.Uint32(e[0:])), uint64(le.Uint32(e[4:]))
	return start, end, le.Uint16(e[8:]), le.Uint32(e[10:])
}

// cellOf is the vector index cell of an address: its first two bytes.
func (r *Reader) cellOf(a u128.U128) int {
	if r.v6 {
		return int(a.Hi >> 48)
	}
	return int(a.Lo >> 16)
}

// cell reads vector index cell c: the offsets of its first entry and of the
// end of its last, both 0 when it has none.
func (r *Reader) cell(c int) (s, e uint32) {
	p := HeaderSize + c*8
	return binary.LittleEndian.Uint32(r.b[p:]), binary.LittleEndian.Uint32(r.b[p+4:])
}

// Lookup finds the region of addr. bits is the prefix length, in addr's own
// family, of the largest block around addr that lies inside the segment
// that holds it: the answer holds for that block. An address of the other
// family than the file's, one in no segment, and one whose segment has an
// empty region, are not found. It allocates nothing.
func (r *Reader) Lookup(addr netip.Addr) (rec Record, bits int, ok bool) {
	addr = addr.Unmap()
	var a u128.U128
	width := 32
	switch {
	case addr.Is4() && !r.v6:
		b := addr.As4()
		a.Lo = uint64(binary.BigEndian.Uint32(b[:]))
	case addr.Is6() && r.v6:
		b := addr.As16()
		a = u128.From16(b)
		width = 128
	default:
		return Record{}, 0, false
	}
	s, e := r.cell(r.cellOf(a))
	if s == 0 {
		return Record{}, 0, false
	}
	lo, hi := int(s-r.first)/int(r.segSize), int(e-r.first)/int(r.segSize)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		start, end, dlen, dptr := r.entry(m)
		switch {
		case a.Less(start):
			hi = m
		case end.Less(a):
			lo = m + 1
		default:
			if dlen == 0 {
				return Record{}, 0, false
			}
			rec, ok = r.parse(r.s[dptr : dptr+uint32(dlen)])
			if !ok {
				return Record{}, 0, false
			}
			return rec, u128.BlockBits(a, start, end, 128-width) - (128 - width), true
		}
	}
	return Record{}, 0, false
}
