// Package ipdbgen writes small IPIP.net .ipdb databases, for test fixtures
// and demos. Output is deterministic: the same input gives the same bytes.
package ipdbgen

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/gslbdns/gslb/internal/atomicfile"
)

// Meta describes the database to build.
type Meta struct {
	Build     int64    // unix seconds
	Languages []string // e.g. {"CN", "EN"}; records store them in this order
	Fields    []string // e.g. {"country_name", "region_name", "isp_domain"}
}

// Rec is one network, IPv4 or IPv6, with a value per field for every
// language. When networks nest, the longest prefix wins.
type Rec struct {
	Network netip.Prefix
	Values  map[string][]string // language -> one value per field
}

// Write builds the database and replaces path with it atomically.
func Write(path string, m Meta, recs []Rec) error {
	b, err := Build(m, recs)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b); err != nil {
		return fmt.Errorf("ipdbgen: %w", err)
	}
	return nil
}

// Build returns the bytes of the database.
func Build(m Meta, recs []Rec) ([]byte, error) {
	if err := checkMeta(m); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("ipdbgen: no networks")
	}
	sorted, err := sortNetworks(recs)
	if err != nil {
		return nil, err
	}
	var t trie
	var recData []byte
	offsets := map[string]int{} // identical records are stored once
	ipVersion := 0
	for _, rec := range sorted {
		raw, err := encodeRecord(m, rec)
		if err != nil {
			return nil, err
		}
		off, ok := offsets[raw]
		if !ok {
			off = len(recData)
			offsets[raw] = off
			recData = binary.BigEndian.AppendUint16(recData, uint16(len(raw)))
			recData = append(recData, raw...)
		}
		p := rec.Network
		if p.Addr().Is4() {
			ipVersion |= 1 // ip_version flag: IPv4
			p = netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), 96+p.Bits())
		} else {
			ipVersion |= 2 // IPv6
		}
		t.insert(p, off)
	}
	return t.encode(m, ipVersion, recData)
}

func checkMeta(m Meta) error {
	if len(m.Languages) == 0 || len(m.Fields) == 0 {
		return errors.New("ipdbgen: need at least one language and one field")
	}
	for _, names := range [][]string{m.Languages, m.Fields} {
		for i, n := range names {
			if n == "" || slices.Contains(names[:i], n) {
				return fmt.Errorf("ipdbgen: empty or repeated name %q in %q", n, names)
			}
		}
	}
	return nil
}

// sortNetworks puts containing networks before the ones inside them, so that
// inserting in order lets the longest prefix win.
func sortNetworks(recs []Rec) ([]Rec, error) {
	out := make([]Rec, len(recs))
	for i, r := range recs {
		p := r.Network
		switch {
		case !p.IsValid():
			return nil, fmt.Errorf("ipdbgen: record %d: invalid network", i+1)
		case p.Addr().Is4In6():
			return nil, fmt.Errorf("ipdbgen: record %d: use plain IPv4 for %s", i+1, p)
		case p.Addr().Is6() && p.Bits() == 0:
			return nil, fmt.Errorf("ipdbgen: record %d: ::/0 cannot be stored, the trie root is not a record", i+1)
		}
		r.Network = p.Masked()
		out[i] = r
	}
	slices.SortStableFunc(out, func(a, b Rec) int {
		if c := cmp.Compare(a.Network.Bits()+bitsOffset(a.Network), b.Network.Bits()+bitsOffset(b.Network)); c != 0 {
			return c
		}
		return a.Network.Addr().Compare(b.Network.Addr())
	})
	for i := 1; i < len(out); i++ {
		if out[i].Network == out[i-1].Network {
			return nil, fmt.Errorf("ipdbgen: network %s is listed twice", out[i].Network)
		}
	}
	return out, nil
}

// bitsOffset makes IPv4 prefix lengths comparable with IPv6 ones.
func bitsOffset(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 96
	}
	return 0
}

// encodeRecord joins the values of all languages with tabs.
func encodeRecord(m Meta, rec Rec) (string, error) {
	var sb strings.Builder
	for i, lang := range m.Languages {
		vals, ok := rec.Values[lang]
		if !ok || len(vals) != len(m.Fields) {
			return "", fmt.Errorf("ipdbgen: %s: language %q needs %d values, has %d", rec.Network, lang, len(m.Fields), len(vals))
		}
		for j, v := range vals {
			if strings.ContainsRune(v, '\t') {
				return "", fmt.Errorf("ipdbgen: %s: %s value %q contains a tab", rec.Network, m.Fields[j], v)
			}
			if i+j > 0 {
				sb.WriteByte('\t')
			}
			sb.WriteString(v)
		}
	}
	if len(rec.Values) != len(m.Languages) {
		return "", fmt.Errorf("ipdbgen: %s: values for a language not in %q", rec.Network, m.Languages)
	}
	if sb.Len() > math.MaxUint16 {
		return "", fmt.Errorf("ipdbgen: %s: record is %d bytes, the limit is %d", rec.Network, sb.Len(), math.MaxUint16)
	}
	return sb.String(), nil
}
