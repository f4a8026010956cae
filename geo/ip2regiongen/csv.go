package ip2regiongen

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
)

// Columns is the header of the CSV files ReadCSV reads.
var Columns = []string{"network", "country", "province", "city", "isp", "iso2"}

// ReadCSV reads segments from a CSV file: lines starting with '#' are
// comments, the first other line is the header Columns, and each row a
// network (CIDR, or FIRST-LAST) and its region, e.g.
//
//	network,country,province,city,isp,iso2
//	202.101.172.0/24,中国,浙江省,杭州市,电信,CN
//
// An empty field is stored as "0", ip2region's unknown. The IPv4 and the
// IPv6 rows come back apart: a file holds one family.
func ReadCSV(path string) (v4, v6 []Rec, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ip2regiongen: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = len(Columns)
	errAt := func(col int, format string, args ...any) error {
		line, c := r.FieldPos(col)
		return fmt.Errorf("ip2regiongen: %s:%d:%d: %s", path, line, c, fmt.Sprintf(format, args...))
	}
	header := false
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("ip2regiongen: %s:%d:%d: %v", path, pe.Line, pe.Column, pe.Err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("ip2regiongen: %s: %w", path, err)
		}
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
		if !header {
			for i, c := range Columns {
				if row[i] != c {
					return nil, nil, errAt(i, "header column %d is %q, want %q (header %s)", i+1, row[i], c, strings.Join(Columns, ","))
				}
			}
			header = true
			continue
		}
		rec, err := parseNetwork(row[0])
		if err != nil {
			return nil, nil, errAt(0, "%v", err)
		}
		for i, v := range row[1:] {
			if strings.ContainsRune(v, '|') {
				return nil, nil, errAt(i+1, "%s value %q contains a '|'", Columns[i+1], v)
			}
		}
		rec.Region = Region(row[1:]...)
		if rec.Start.Is4() {
			v4 = append(v4, rec)
		} else {
			v6 = append(v6, rec)
		}
	}
	if !header {
		return nil, nil, fmt.Errorf("ip2regiongen: %s: no header line", path)
	}
	if len(v4)+len(v6) == 0 {
		return nil, nil, fmt.Errorf("ip2regiongen: %s: no networks", path)
	}
	return v4, v6, nil
}

func parseNetwork(s string) (Rec, error) {
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err := netip.ParseAddr(first)
		if err != nil {
			return Rec{}, fmt.Errorf("bad range start: %v", err)
		}
		b, err := netip.ParseAddr(last)
		if err != nil {
			return Rec{}, fmt.Errorf("bad range end: %v", err)
		}
		if a.Is4() != b.Is4() || a.Is4In6() || b.Is4In6() || a.Zone() != "" || b.Zone() != "" {
			return Rec{}, fmt.Errorf("range %s: want two plain addresses of one family", s)
		}
		if b.Less(a) {
			return Rec{}, fmt.Errorf("range %s ends before it starts", s)
		}
		return Rec{Start: a, End: b}, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Rec{}, fmt.Errorf("bad network: %v", err)
	}
	if p != p.Masked() {
		return Rec{}, fmt.Errorf("network %s has host bits set (want %s)", p, p.Masked())
	}
	if p.Addr().Is4In6() {
		return Rec{}, fmt.Errorf("use plain IPv4 for %s", p)
	}
	return PrefixRec(p, ""), nil
}
