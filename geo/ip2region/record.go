package ip2region

import "strings"

// Record is a region's fields. Its strings point into the reader's buffer
// and stay valid as long as they are used. ip2region writes "0" for an
// unknown field; Record gives "" for it.
type Record struct {
	Raw      string // the whole region string
	Country  string // Chinese for China ("中国"), English elsewhere
	Province string // e.g. "广东省", "北京市", "新疆"
	City     string
	ISP      string // e.g. "电信", "联通", "移动"
	ISO2     string // country code; structure 3 only
}

// fields is the least number of '|'-separated fields a region has.
const fields = 5

// parse splits a region by its structure's layout without allocating.
func (r *Reader) parse(raw string) (Record, bool) {
	var f [fields]string
	s := raw
	for i := range f {
		j := strings.IndexByte(s, '|')
		if j < 0 {
			if i < fields-1 {
				return Record{}, false
			}
			j = len(s)
		}
		f[i] = unknown(s[:j])
		s = s[min(j+1, len(s)):]
	}
	if r.structure == Structure2 {
		// country|area|province|city|isp
		return Record{Raw: raw, Country: f[0], Province: f[2], City: f[3], ISP: f[4]}, true
	}
	return Record{Raw: raw, Country: f[0], Province: f[1], City: f[2], ISP: f[3], ISO2: f[4]}, true
}

func unknown(s string) string {
	if s == "0" {
		return ""
	}
	return s
}
