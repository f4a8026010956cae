package ipdb

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
)

// IP version flags of Meta.IPVersion.
const (
	IPv4 = 1
	IPv6 = 2
)

// Meta is the metadata header of an .ipdb file.
type Meta struct {
	Build     int64          `json:"build"`      // unix seconds
	IPVersion uint16         `json:"ip_version"` // IPv4|IPv6 flags
	Languages map[string]int `json:"languages"`  // language -> index of its first value in a record
	NodeCount int            `json:"node_count"`
	TotalSize int            `json:"total_size"` // bytes after the metadata
	Fields    []string       `json:"fields"`
}

// rawMeta uses pointers so that a missing key is told apart from a zero.
type rawMeta struct {
	Build     *int64         `json:"build"`
	IPVersion *int           `json:"ip_version"`
	Languages map[string]int `json:"languages"`
	NodeCount *int           `json:"node_count"`
	TotalSize *int           `json:"total_size"`
	Fields    []string       `json:"fields"`
}

// parseMeta checks the metadata on its own; dataLen is the number of bytes
// that follow it in the file.
func parseMeta(b []byte, dataLen int) (Meta, error) {
	var raw rawMeta
	if err := json.Unmarshal(b, &raw); err != nil {
		return Meta{}, fmt.Errorf("bad metadata JSON: %v", err)
	}
	switch {
	case raw.Build == nil:
		return Meta{}, errMissing("build")
	case raw.IPVersion == nil:
		return Meta{}, errMissing("ip_version")
	case raw.Languages == nil:
		return Meta{}, errMissing("languages")
	case raw.NodeCount == nil:
		return Meta{}, errMissing("node_count")
	case raw.TotalSize == nil:
		return Meta{}, errMissing("total_size")
	case raw.Fields == nil:
		return Meta{}, errMissing("fields")
	}
	m := Meta{
		Build:     *raw.Build,
		Languages: raw.Languages,
		NodeCount: *raw.NodeCount,
		TotalSize: *raw.TotalSize,
		Fields:    raw.Fields,
	}
	if m.Build < 0 {
		return Meta{}, fmt.Errorf("metadata build %d is negative", m.Build)
	}
	if v := *raw.IPVersion; v < 1 || v > IPv4|IPv6 {
		return Meta{}, fmt.Errorf("metadata ip_version %d: want 1 (IPv4), 2 (IPv6) or 3 (both)", v)
	}
	m.IPVersion = uint16(*raw.IPVersion)
	if err := checkFields(m.Fields); err != nil {
		return Meta{}, err
	}
	if err := checkLanguages(m.Languages, len(m.Fields)); err != nil {
		return Meta{}, err
	}
	if m.TotalSize != dataLen {
		return Meta{}, fmt.Errorf("metadata total_size %d does not match the %d bytes after the metadata", m.TotalSize, dataLen)
	}
	// The trie must fit, and child values are uint32s that must also be able
	// to point past it.
	if m.NodeCount < 1 || m.NodeCount > m.TotalSize/8 || uint64(m.NodeCount) >= math.MaxUint32 {
		return Meta{}, fmt.Errorf("metadata node_count %d does not fit: the %d-byte data section holds at most %d nodes", m.NodeCount, m.TotalSize, m.TotalSize/8)
	}
	return m, nil
}

func errMissing(key string) error {
	return fmt.Errorf("metadata lacks %q", key)
}

func checkFields(fields []string) error {
	if len(fields) == 0 {
		return fmt.Errorf("metadata fields is empty")
	}
	seen := make(map[string]bool, len(fields))
	for i, f := range fields {
		if f == "" {
			return fmt.Errorf("metadata field %d has no name", i)
		}
		if seen[f] {
			return fmt.Errorf("metadata field %q is listed twice", f)
		}
		seen[f] = true
	}
	return nil
}

// checkLanguages wants each language's values to lie within the
// len(languages)*nf values a record carries.
func checkLanguages(langs map[string]int, nf int) error {
	if len(langs) == 0 {
		return fmt.Errorf("metadata languages is empty")
	}
	for l, off := range langs {
		if l == "" {
			return fmt.Errorf("metadata has a language with no name")
		}
		if off < 0 || off > (len(langs)-1)*nf {
			return fmt.Errorf("metadata language %q offset %d is out of range 0..%d", l, off, (len(langs)-1)*nf)
		}
	}
	return nil
}

// clone returns a copy that shares nothing mutable with m.
func (m Meta) clone() Meta {
	m.Languages = maps.Clone(m.Languages)
	m.Fields = slices.Clone(m.Fields)
	return m
}
