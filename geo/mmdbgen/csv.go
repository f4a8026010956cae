package mmdbgen

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

var csvHeader = []string{"network", "country", "province", "city", "lat", "lon", "radius", "asn", "org"}

// ReadCSV reads the demo CSV: lines starting with '#' are comments, the first
// other line is the header network,country,province,city,lat,lon,radius,asn,org.
// A row with a country gives a City record; a row with an asn or org gives an
// ASN record. Empty lat/lon/radius/asn mean none.
func ReadCSV(path string) (cities []City, asns []ASN, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("mmdbgen: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.FieldsPerRecord = len(csvHeader)
	r.TrimLeadingSpace = true
	header := true
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("mmdbgen: %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if header {
			for i, h := range csvHeader {
				if strings.TrimSpace(strings.ToLower(row[i])) != h {
					return nil, nil, fmt.Errorf("mmdbgen: %s:%d: header column %d is %q, want %q", path, line, i+1, row[i], h)
				}
			}
			header = false
			continue
		}
		c, a, hasASN, err := parseRow(row)
		if err != nil {
			return nil, nil, fmt.Errorf("mmdbgen: %s:%d: %w", path, line, err)
		}
		if c.Country != "" {
			cities = append(cities, c)
		}
		if hasASN {
			asns = append(asns, a)
		}
	}
	if header {
		return nil, nil, fmt.Errorf("mmdbgen: %s: no header line", path)
	}
	return cities, asns, nil
}

func parseRow(row []string) (c City, a ASN, hasASN bool, err error) {
	for i := range row {
		row[i] = strings.TrimSpace(row[i])
	}
	c = City{Network: row[0], Country: strings.ToUpper(row[1]), Province: row[2], City: row[3]}
	if c.Network == "" {
		return c, a, false, errors.New("network: empty")
	}
	if row[4] != "" || row[5] != "" {
		if c.Lat, err = strconv.ParseFloat(row[4], 64); err != nil || c.Lat < -90 || c.Lat > 90 {
			return c, a, false, fmt.Errorf("lat: bad value %q", row[4])
		}
		if c.Lon, err = strconv.ParseFloat(row[5], 64); err != nil || c.Lon < -180 || c.Lon > 180 {
			return c, a, false, fmt.Errorf("lon: bad value %q", row[5])
		}
	}
	if row[6] != "" {
		v, err := strconv.ParseUint(row[6], 10, 16)
		if err != nil {
			return c, a, false, fmt.Errorf("radius: bad value %q", row[6])
		}
		c.Radius = uint16(v)
	}
	a = ASN{Network: row[0], Org: row[8]}
	if s := strings.TrimPrefix(strings.ToUpper(row[7]), "AS"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return c, a, false, fmt.Errorf("asn: bad value %q", row[7])
		}
		a.ASN = uint32(v)
	}
	return c, a, a.ASN != 0 || a.Org != "", nil
}
