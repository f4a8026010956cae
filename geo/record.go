package geo

import (
	"fmt"

	"github.com/oschwald/maxminddb-golang/v2/mmdbdata"
)

// cityRecord holds the few City/Country fields Lookup needs; it decodes
// straight from the mmdb cursor, skipping everything else.
type cityRecord struct {
	country, registered, continent, province, city string
	lat, lon                                       float64
	radius                                         uint16
	hasLat, hasLon                                 bool
}

// asnRecord covers GeoLite2-ASN and GeoIP2-ISP records.
type asnRecord struct {
	asn             uint32
	asOrg, isp, org string
}

const maxString = 4096

// eachKey walks a map, calling fn for every key; fn returns the successor
// cursor and true when it consumed the value, else the value is skipped.
func eachKey(c mmdbdata.Cursor, fn func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error)) (mmdbdata.Cursor, error) {
	entries, err := c.MapReader()
	if err != nil {
		return mmdbdata.Cursor{}, err
	}
	next := entries.First()
	for range entries.Len() {
		key, v, err := next.ReadMapKey()
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
		n, ok, err := fn(key, v)
		if err != nil {
			return mmdbdata.Cursor{}, fmt.Errorf("field %s: %w", key, err)
		}
		if !ok {
			if n, err = v.Skip(); err != nil {
				return mmdbdata.Cursor{}, err
			}
		}
		next = n
	}
	return entries.End(next)
}

// stringField reads map[want] as a string into *dst.
func stringField(c mmdbdata.Cursor, want string, dst *string) (mmdbdata.Cursor, error) {
	return eachKey(c, func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error) {
		if string(key) != want {
			return mmdbdata.Cursor{}, false, nil
		}
		s, n, err := v.ReadStringMaxSize(maxString)
		*dst = s
		return n, true, err
	})
}

func (r *cityRecord) UnmarshalMaxMindDBCursor(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	return eachKey(c, func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error) {
		var n mmdbdata.Cursor
		var err error
		switch string(key) {
		case "country":
			n, err = stringField(v, "iso_code", &r.country)
		case "registered_country":
			n, err = stringField(v, "iso_code", &r.registered)
		case "continent":
			n, err = stringField(v, "code", &r.continent)
		case "city":
			n, err = eachKey(v, func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error) {
				if string(key) != "names" {
					return mmdbdata.Cursor{}, false, nil
				}
				n, err := stringField(v, "en", &r.city)
				return n, true, err
			})
		case "subdivisions":
			n, err = r.subdivisions(v)
		case "location":
			n, err = eachKey(v, func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error) {
				var n mmdbdata.Cursor
				var err error
				switch string(key) {
				case "latitude":
					r.lat, n, err = v.ReadFloat()
					r.hasLat = err == nil
				case "longitude":
					r.lon, n, err = v.ReadFloat()
					r.hasLon = err == nil
				case "accuracy_radius":
					var u uint64
					u, n, err = v.ReadUint()
					r.radius = uint16(min(u, 65535))
				default:
					return n, false, nil
				}
				return n, true, err
			})
		default:
			return n, false, nil
		}
		return n, true, err
	})
}

// subdivisions keeps the first (largest) subdivision's iso_code.
func (r *cityRecord) subdivisions(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	values, err := c.SliceMaxSize(32)
	if err != nil {
		return mmdbdata.Cursor{}, err
	}
	var next mmdbdata.Cursor
	for {
		i, elem, ok := values.Next(next)
		if !ok {
			break
		}
		if i == 0 {
			next, err = stringField(elem, "iso_code", &r.province)
		} else {
			next, err = elem.Skip()
		}
		if err != nil {
			return mmdbdata.Cursor{}, err
		}
	}
	return values.End()
}

func (r *asnRecord) UnmarshalMaxMindDBCursor(c mmdbdata.Cursor) (mmdbdata.Cursor, error) {
	return eachKey(c, func(key []byte, v mmdbdata.Cursor) (mmdbdata.Cursor, bool, error) {
		var n mmdbdata.Cursor
		var err error
		switch string(key) {
		case "autonomous_system_number":
			var u uint64
			u, n, err = v.ReadUint()
			r.asn = uint32(min(u, 1<<32-1))
		case "autonomous_system_organization":
			r.asOrg, n, err = v.ReadStringMaxSize(maxString)
		case "isp":
			r.isp, n, err = v.ReadStringMaxSize(maxString)
		case "organization":
			r.org, n, err = v.ReadStringMaxSize(maxString)
		default:
			return n, false, nil
		}
		return n, true, err
	})
}
