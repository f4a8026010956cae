// Package ipdb reads IPIP.net .ipdb databases: a length-prefixed JSON
// metadata header, then a binary trie over IPv6 addresses (IPv4 lives under
// ::ffff:0:0/96) followed by tab-separated records. The metadata and the
// whole trie are checked at open; lookups allocate nothing and return strings
// that point into the file's buffer.
package ipdb

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"slices"
	"unsafe"
)

// Reader looks up addresses in one .ipdb file. It is immutable and safe for
// concurrent use.
type Reader struct {
	name     string
	meta     Meta
	data     []byte // the section after the metadata: trie, then records
	str      string // data as a string, so that record fields are substrings
	nodes    int
	v4root   uint32 // trie value at ::ffff:0:0/96; nodes when there is no IPv4
	v6       bool
	fieldIdx map[string]int

	// Language-specific; WithLanguage makes a copy with other values.
	lang string
	off  int    // index of the language's first value in a record
	slot []int8 // field index -> well-known slot, or -1
}

// Open reads the whole file into memory. Not mmap: a reload can then drop the
// old Reader while queries still use it, and the GC frees it after them.
func Open(path string) (*Reader, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ipdb: %w", err)
	}
	return FromBytes(path, b)
}

// FromBytes uses b, which must not change afterwards, as the file named name
// (used in errors only).
func FromBytes(name string, b []byte) (*Reader, error) {
	if len(b) < 4 {
		return nil, formatErr(name, "file too short (%d bytes) to hold the metadata length", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if n == 0 || uint64(n) > uint64(len(b)-4) {
		return nil, formatErr(name, "metadata length %d does not fit the %d bytes after it", n, len(b)-4)
	}
	metaEnd := 4 + int(n)
	m, err := parseMeta(b[4:metaEnd], len(b)-metaEnd)
	if err != nil {
		return nil, formatErr(name, "%v", err)
	}
	data := b[metaEnd:]
	r := &Reader{
		name:     name,
		meta:     m,
		data:     data,
		str:      unsafe.String(&data[0], len(data)), // not empty: there is at least one node
		nodes:    m.NodeCount,
		v4root:   uint32(m.NodeCount),
		v6:       m.IPVersion&IPv6 != 0,
		fieldIdx: make(map[string]int, len(m.Fields)),
	}
	for i, f := range m.Fields {
		r.fieldIdx[f] = i
	}
	if err := r.checkTrie(); err != nil {
		return nil, formatErr(name, "%v", err)
	}
	if m.IPVersion&IPv4 != 0 {
		r.v4root = r.findV4Root()
	}
	lang := "CN"
	if _, ok := m.Languages[lang]; !ok {
		lang = r.Languages()[0]
	}
	r.setLanguage(lang)
	return r, nil
}

func formatErr(name, format string, args ...any) error {
	return fmt.Errorf("ipdb: %s: %s", name, fmt.Sprintf(format, args...))
}

// WithLanguage returns a Reader sharing r's data whose records give the values
// of lang.
func (r *Reader) WithLanguage(lang string) (*Reader, error) {
	if _, ok := r.meta.Languages[lang]; !ok {
		return nil, fmt.Errorf("ipdb: %s: no language %q (have %q)", r.name, lang, r.Languages())
	}
	c := *r
	c.setLanguage(lang)
	return &c, nil
}

func (r *Reader) setLanguage(lang string) {
	r.lang = lang
	r.off = r.meta.Languages[lang]
	r.slot = make([]int8, len(r.meta.Fields))
	for i, f := range r.meta.Fields {
		r.slot[i] = -1
		if k := slices.Index(knownFields[:], f); k >= 0 {
			r.slot[i] = int8(k)
		}
	}
}

// Meta returns a copy of the file's metadata.
func (r *Reader) Meta() Meta { return r.meta.clone() }

// Language is the language whose values records give.
func (r *Reader) Language() string { return r.lang }

// Languages lists the file's languages, sorted.
func (r *Reader) Languages() []string {
	return slices.Sorted(maps.Keys(r.meta.Languages))
}
