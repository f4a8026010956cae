package ip2region_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

var le = binary.LittleEndian

// first is the offset of a file's first segment index entry.
func first(b []byte) int { return int(le.Uint32(b[8:])) }

// TestValidate: every way a file can be broken is refused at open, with an
// error that names the file and says what is wrong.
func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func([]byte) []byte
		wants string
	}{
		{"too short", func(b []byte) []byte { return b[:1000] }, "too short"},
		{"structure", func(b []byte) []byte { le.PutUint16(b, 7); return b }, "structure version 7"},
		{"ip version", func(b []byte) []byte { le.PutUint16(b[16:], 5); return b }, "ip version 5"},
		{"pointer size", func(b []byte) []byte { le.PutUint16(b[18:], 8); return b }, "pointer size 8"},
		{"index policy", func(b []byte) []byte { le.PutUint16(b[2:], 9); return b }, "index policy 9"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, "truncated"},
		{"padded", func(b []byte) []byte { return append(b, 0) }, "truncated or padded"},
		{"index start in the vector index", func(b []byte) []byte { le.PutUint32(b[8:], 300); return b }, "want MinSize"},
		{"index not whole entries", func(b []byte) []byte { le.PutUint32(b[8:], le.Uint32(b[8:])+1); return b }, "whole number"},
		{"end before start", func(b []byte) []byte {
			p := first(b)
			le.PutUint32(b[p+4:], le.Uint32(b[p:])-1)
			return b
		}, "ends before it starts"},
		{"unsorted", func(b []byte) []byte {
			// The second entry starts where the first does.
			p := first(b)
			copy(b[p+14:p+18], b[p:p+4])
			return b
		}, "sorted and disjoint"},
		{"across cells", func(b []byte) []byte {
			p := first(b)
			le.PutUint32(b[p+4:], le.Uint32(b[p+4:])+1<<16)
			return b
		}, "two vector index cells"},
		{"vector cell", func(b []byte) []byte {
			le.PutUint32(b[ip2region.HeaderSize+8*0x0101:], uint32(first(b)))
			return b
		}, "vector index cell 1.1"},
		{"region past the data", func(b []byte) []byte {
			p := first(b)
			le.PutUint32(b[p+10:], uint32(first(b)-2))
			return b
		}, "outside the data section"},
		{"region in the vector index", func(b []byte) []byte {
			le.PutUint32(b[first(b)+10:], 100)
			return b
		}, "outside the data section"},
		{"regions overlap", func(b []byte) []byte {
			p := first(b)
			le.PutUint32(b[p+10:], le.Uint32(b[p+10:])+1)
			return b
		}, "overlap"},
		{"few fields", func(b []byte) []byte {
			i := strings.Index(string(b), "Brisbane|0|AU")
			copy(b[i+8:], "#0#AU")
			return b
		}, "fewer than 5"},
		{"not UTF-8", func(b []byte) []byte {
			i := strings.Index(string(b), "Brisbane")
			b[i] = 0xff
			return b
		}, "not UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ip2region.FromBytes("bad.xdb", tc.edit(v4(t)))
			if err == nil || !strings.Contains(err.Error(), tc.wants) || !strings.Contains(err.Error(), "bad.xdb") {
				t.Errorf("err = %v, want one naming bad.xdb and saying %q", err, tc.wants)
			}
		})
	}
}

// TestGenerateErrors: the generator refuses what it cannot write.
func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name string
		m    ip2regiongen.Meta
		recs []ip2regiongen.Rec
		want string
	}{
		{"no segments", ip2regiongen.Meta{IPVersion: 4}, nil, "no segments"},
		{"v6 in structure 2", ip2regiongen.Meta{Structure: 2, IPVersion: 6}, recs6, "structure 2 with IPv6"},
		{"family", ip2regiongen.Meta{IPVersion: 4}, recs6, "want plain IPv4"},
		{"overlap", ip2regiongen.Meta{IPVersion: 4}, []ip2regiongen.Rec{pfx("10.0.0.0/8", zjTelecom), pfx("10.1.0.0/16", gdUnicom)}, "overlap"},
		{"backwards", ip2regiongen.Meta{IPVersion: 4}, []ip2regiongen.Rec{rng("10.0.0.9", "10.0.0.1", zjTelecom)}, "ends before"},
	}
	for _, tc := range tests {
		if _, err := ip2regiongen.Build(tc.m, tc.recs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
