package ipdbgen

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// Language is the one language of databases read from CSV.
const Language = "CN"

// ReadCSV reads networks from a CSV file: lines starting with '#' are
// comments, the first other line is the header, whose first column is
// "network" and the others field names, e.g.
//
//	network,country_name,region_name,city_name,isp_domain,country_code
//	202.101.172.0/24,中国,浙江,杭州,电信,CN
//
// The result has Build 0 and the one language Language.
func ReadCSV(path string) (Meta, []Rec, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, nil, fmt.Errorf("ipdbgen: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.TrimLeadingSpace = true
	errAt := func(col int, format string, args ...any) error {
		line, c := r.FieldPos(col)
		return fmt.Errorf("ipdbgen: %s:%d:%d: %s", path, line, c, fmt.Sprintf(format, args...))
	}
	var m Meta
	var recs []Rec
	lineOf := map[netip.Prefix]int{}
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			return Meta{}, nil, fmt.Errorf("ipdbgen: %s:%d:%d: %v", path, pe.Line, pe.Column, pe.Err)
		}
		if err != nil {
			return Meta{}, nil, fmt.Errorf("ipdbgen: %s: %w", path, err)
		}
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
		if m.Fields == nil {
			if row[0] != "network" {
				return Meta{}, nil, errAt(0, "header starts with %q, want \"network\"", row[0])
			}
			if len(row) < 2 {
				return Meta{}, nil, errAt(0, "header names no fields")
			}
			for i, name := range row[1:] {
				if name == "" || name == "network" || slices.Contains(row[1:i+1], name) {
					return Meta{}, nil, errAt(i+1, "empty or repeated field name %q", name)
				}
			}
			m = Meta{Languages: []string{Language}, Fields: row[1:]}
			continue
		}
		p, err := netip.ParsePrefix(row[0])
		if err != nil {
			return Meta{}, nil, errAt(0, "bad network: %v", err)
		}
		if p != p.Masked() {
			return Meta{}, nil, errAt(0, "network %s has host bits set (want %s)", p, p.Masked())
		}
		if p.Addr().Is4In6() {
			return Meta{}, nil, errAt(0, "use plain IPv4 for %s", p)
		}
		if p.Addr().Is6() && p.Bits() == 0 {
			return Meta{}, nil, errAt(0, "::/0 cannot be stored")
		}
		line, _ := r.FieldPos(0)
		if prev, ok := lineOf[p]; ok {
			return Meta{}, nil, errAt(0, "network %s is already on line %d", p, prev)
		}
		lineOf[p] = line
		for i, v := range row[1:] {
			if strings.ContainsRune(v, '\t') {
				return Meta{}, nil, errAt(i+1, "%s value contains a tab", m.Fields[i])
			}
		}
		recs = append(recs, Rec{Network: p, Values: map[string][]string{Language: row[1:]}})
	}
	if m.Fields == nil {
		return Meta{}, nil, fmt.Errorf("ipdbgen: %s: no header line", path)
	}
	if len(recs) == 0 {
		return Meta{}, nil, fmt.Errorf("ipdbgen: %s: no networks", path)
	}
	return m, recs, nil
}
