package ipdb

import "strings"

// Slots of the well-known fields, resolved at open so that their accessors
// need no lookup by name.
const (
	fCountryName = iota
	fRegionName
	fCityName
	fDistrictName
	fOwnerDomain
	fISPDomain
	fCountryCode
	fContinentCode
	fLatitude
	fLongitude
	fChinaAdminCode
	numKnown
)

var knownFields = [numKnown]string{
	fCountryName:    "country_name",
	fRegionName:     "region_name",
	fCityName:       "city_name",
	fDistrictName:   "district_name",
	fOwnerDomain:    "owner_domain",
	fISPDomain:      "isp_domain",
	fCountryCode:    "country_code",
	fContinentCode:  "continent_code",
	fLatitude:       "latitude",
	fLongitude:      "longitude",
	fChinaAdminCode: "china_admin_code",
}

// span is a value's position in Record.s; records are at most 64 KiB.
type span struct{ lo, hi uint16 }

// Record is one network's values in the reader's language. Its strings point
// into the reader's buffer and stay valid as long as they are used. A field
// the file lacks reads as "".
type Record struct {
	s     string // the language's values, tab separated
	idx   map[string]int
	known [numKnown]span
}

// parse cuts the reader's language out of a record in one pass, without
// allocating. A record with fewer values than the language needs is bad.
func (r *Reader) parse(raw string) (Record, bool) {
	rec := Record{idx: r.fieldIdx}
	first, last := r.off, r.off+len(r.slot)-1
	field, start, lang := 0, 0, 0
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && raw[i] != '\t' {
			continue
		}
		if field >= first {
			if field == first {
				lang = start
			}
			if k := r.slot[field-first]; k >= 0 {
				rec.known[k] = span{uint16(start - lang), uint16(i - lang)}
			}
			if field == last {
				rec.s = raw[lang:i]
				return rec, true
			}
		}
		field++
		start = i + 1
	}
	return Record{}, false
}

func (r Record) get(k int) string { return r.s[r.known[k].lo:r.known[k].hi] }

// Well-known fields.

func (r Record) CountryName() string    { return r.get(fCountryName) }
func (r Record) RegionName() string     { return r.get(fRegionName) }
func (r Record) CityName() string       { return r.get(fCityName) }
func (r Record) DistrictName() string   { return r.get(fDistrictName) }
func (r Record) OwnerDomain() string    { return r.get(fOwnerDomain) }
func (r Record) ISPDomain() string      { return r.get(fISPDomain) }
func (r Record) CountryCode() string    { return r.get(fCountryCode) }
func (r Record) ContinentCode() string  { return r.get(fContinentCode) }
func (r Record) Latitude() string       { return r.get(fLatitude) }
func (r Record) Longitude() string      { return r.get(fLongitude) }
func (r Record) ChinaAdminCode() string { return r.get(fChinaAdminCode) }

// Field returns the value of any field by name, "" when the file lacks it.
// It scans the record, so the accessors above are faster.
func (r Record) Field(name string) string {
	i, ok := r.idx[name]
	if !ok {
		return ""
	}
	s := r.s
	for ; i > 0; i-- {
		j := strings.IndexByte(s, '\t')
		if j < 0 {
			return ""
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, '\t'); j >= 0 {
		s = s[:j]
	}
	return s
}
