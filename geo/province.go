package geo

import (
	"errors"
	"fmt"
	"strings"
)

type cnProvince struct {
	code, numeric, en, zh string
	aliases               []string // extra spellings, compared after folding
}

// The 34 provincial-level divisions of China (ISO 3166-2:CN since 2017; the
// numeric codes are the pre-2017 ones older MaxMind builds still report).
var cnProvinces = []cnProvince{
	{"BJ", "11", "Beijing", "北京", nil},
	{"TJ", "12", "Tianjin", "天津", nil},
	{"HE", "13", "Hebei", "河北", nil},
	{"SX", "14", "Shanxi", "山西", nil},
	{"NM", "15", "Inner Mongolia", "内蒙古", []string{"Nei Mongol", "Nei Menggu", "Neimenggu", "Inner Mongolia Autonomous Region", "内蒙古自治区"}},
	{"LN", "21", "Liaoning", "辽宁", nil},
	{"JL", "22", "Jilin", "吉林", nil},
	{"HL", "23", "Heilongjiang", "黑龙江", nil},
	{"SH", "31", "Shanghai", "上海", nil},
	{"JS", "32", "Jiangsu", "江苏", nil},
	{"ZJ", "33", "Zhejiang", "浙江", nil},
	{"AH", "34", "Anhui", "安徽", nil},
	{"FJ", "35", "Fujian", "福建", nil},
	{"JX", "36", "Jiangxi", "江西", nil},
	{"SD", "37", "Shandong", "山东", nil},
	{"HA", "41", "Henan", "河南", nil},
	{"HB", "42", "Hubei", "湖北", nil},
	{"HN", "43", "Hunan", "湖南", nil},
	{"GD", "44", "Guangdong", "广东", nil},
	{"GX", "45", "Guangxi", "广西", []string{"Guangxi Zhuangzu Zizhiqu", "Guangxi Zhuang Autonomous Region", "广西壮族自治区"}},
	{"HI", "46", "Hainan", "海南", nil},
	{"CQ", "50", "Chongqing", "重庆", nil},
	{"SC", "51", "Sichuan", "四川", nil},
	{"GZ", "52", "Guizhou", "贵州", nil},
	{"YN", "53", "Yunnan", "云南", nil},
	{"XZ", "54", "Tibet", "西藏", []string{"Xizang", "Xizang Zizhiqu", "Tibet Autonomous Region", "西藏自治区"}},
	{"SN", "61", "Shaanxi", "陕西", nil},
	{"GS", "62", "Gansu", "甘肃", nil},
	{"QH", "63", "Qinghai", "青海", nil},
	{"NX", "64", "Ningxia", "宁夏", []string{"Ningxia Huizu Zizhiqu", "Ningxia Hui Autonomous Region", "宁夏回族自治区"}},
	{"XJ", "65", "Xinjiang", "新疆", []string{"Xinjiang Uygur Zizhiqu", "Xinjiang Uyghur Autonomous Region", "Xinjiang Uygur Autonomous Region", "新疆维吾尔自治区"}},
	{"TW", "71", "Taiwan", "台湾", []string{"臺灣", "台湾省"}},
	{"HK", "91", "Hong Kong", "香港", []string{"Hongkong", "Xianggang", "Hong Kong SAR", "香港特别行政区"}},
	{"MO", "92", "Macao", "澳门", []string{"Macau", "Aomen", "Macao SAR", "澳門", "澳门特别行政区"}},
}

var (
	cnByKey  = map[string]string{} // folded spelling -> code
	cnByCode = map[string]*cnProvince{}
)

// Generic suffixes stripped when a spelling is not found as is.
var cnSuffixes = []string{
	"特别行政区", "自治区", "省", "市",
	"province", "municipality", "sheng", "shi", "sar", "specialadministrativeregion", "zizhiqu", "autonomousregion",
}

func init() {
	for i := range cnProvinces {
		p := &cnProvinces[i]
		cnByCode[p.code] = p
		for _, s := range append([]string{p.code, p.numeric, p.en, p.zh, "CN-" + p.code, "CN-" + p.numeric}, p.aliases...) {
			cnByKey[fold(s)] = p.code
		}
	}
}

// fold lower-cases ASCII and drops spaces, dots, hyphens and apostrophes.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c == ' ' || c == '-' || c == '_' || c == '.' || c == '\'' || c == '\t':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// NormalizePlace checks a country code and an optional province, as the
// node table and the overrides write them, and returns the country, its
// continent and the province's code. An error names the field.
func NormalizePlace(country, province string) (cc, continent, prov string, err error) {
	cc = strings.ToUpper(strings.TrimSpace(country))
	if cc == "" {
		return "", "", "", errors.New("country: missing; country is required, an ISO 3166-1 alpha-2 code such as CN")
	}
	if continent = ContinentOf(cc); continent == "" {
		return "", "", "", fmt.Errorf("country: %q is not an ISO 3166-1 alpha-2 code", country)
	}
	if province != "" {
		p, ok := NormalizeProvince(cc, province)
		if !ok {
			return "", "", "", fmt.Errorf("province: unknown province %q for country %s", province, cc)
		}
		prov = p
	}
	return cc, continent, prov, nil
}

// NormalizeProvince maps a province spelling to its ISO 3166-2 subdivision
// code without the country prefix. For CN it knows all 34 provincial-level
// divisions by code, old numeric code, English, pinyin and Chinese name. For
// other countries it accepts a code of 1-3 letters or digits, with an optional
// "CC-" prefix for that country.
func NormalizeProvince(country, s string) (code string, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	country = strings.ToUpper(strings.TrimSpace(country))
	if country == "CN" {
		if c, ok := cnByCode[s]; ok { // fast path: MaxMind's own spelling
			return c.code, true
		}
		if c, ok := cnByKey[s]; ok { // old numeric codes, lower-case codes
			return c, true
		}
		k := fold(s)
		for range 3 {
			if c, ok := cnByKey[k]; ok {
				return c, true
			}
			trimmed := k
			for _, suf := range cnSuffixes {
				if strings.HasSuffix(trimmed, suf) && len(trimmed) > len(suf) {
					trimmed = strings.TrimSuffix(trimmed, suf)
					break
				}
			}
			if trimmed == k {
				break
			}
			k = trimmed
		}
		return "", false
	}
	u := strings.ToUpper(s)
	if country != "" && len(u) > len(country)+1 && u[len(country)] == '-' && u[:len(country)] == country {
		u = u[len(country)+1:]
	}
	if len(u) > 3 {
		return "", false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return "", false
		}
	}
	return u, true
}

// cnCapitals are the provincial capitals: where a client is placed when a
// database knows its province but not its city's coordinates.
var cnCapitals = map[string][2]float64{
	"BJ": {39.90, 116.41}, "TJ": {39.13, 117.20}, "HE": {38.04, 114.51}, "SX": {37.87, 112.55},
	"NM": {40.84, 111.75}, "LN": {41.81, 123.43}, "JL": {43.82, 125.32}, "HL": {45.80, 126.53},
	"SH": {31.23, 121.47}, "JS": {32.06, 118.80}, "ZJ": {30.27, 120.16}, "AH": {31.82, 117.23},
	"FJ": {26.07, 119.30}, "JX": {28.68, 115.86}, "SD": {36.65, 117.12}, "HA": {34.75, 113.63},
	"HB": {30.59, 114.31}, "HN": {28.23, 112.94}, "GD": {23.13, 113.26}, "GX": {22.82, 108.37},
	"HI": {20.04, 110.34}, "CQ": {29.56, 106.55}, "SC": {30.57, 104.07}, "GZ": {26.65, 106.63},
	"YN": {25.04, 102.71}, "XZ": {29.65, 91.17}, "SN": {34.34, 108.94}, "GS": {36.06, 103.83},
	"QH": {36.62, 101.78}, "NX": {38.49, 106.23}, "XJ": {43.83, 87.62}, "TW": {25.03, 121.56},
	"HK": {22.32, 114.17}, "MO": {22.20, 113.54},
}

// ProvinceCapital returns the coordinates of a province's capital.
func ProvinceCapital(country, code string) (lat, lon float64, ok bool) {
	if p := cnProvinceOf(country, code); p != nil {
		c := cnCapitals[p.code]
		return c[0], c[1], true
	}
	return 0, 0, false
}

// provinceFromRegion reads a Chinese database's region name: the name
// alone (浙江), with a suffix (浙江省), or followed by more (浙江嘉兴).
func provinceFromRegion(region string) (string, bool) {
	if p, ok := NormalizeProvince("CN", region); ok && cnByCode[p] != nil {
		return p, true
	}
	for i := range cnProvinces {
		if p := &cnProvinces[i]; strings.HasPrefix(region, p.zh) {
			return p.code, true
		}
	}
	return "", false
}

// ProvinceName returns the English name of a subdivision code, e.g.
// "Zhejiang" for CN/ZJ, or "" when unknown.
func ProvinceName(country, code string) string {
	if p := cnProvinceOf(country, code); p != nil {
		return p.en
	}
	return ""
}

// ProvinceNameZH returns the Chinese name of a CN subdivision code, or "".
func ProvinceNameZH(country, code string) string {
	if p := cnProvinceOf(country, code); p != nil {
		return p.zh
	}
	return ""
}

func cnProvinceOf(country, code string) *cnProvince {
	if !strings.EqualFold(country, "CN") {
		return nil
	}
	return cnByCode[strings.ToUpper(code)]
}
