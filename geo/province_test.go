package geo

import "testing"

func TestNormalizeProvince(t *testing.T) {
	tests := []struct {
		country, in, want string
		ok                bool
	}{
		{"CN", "ZJ", "ZJ", true},
		{"CN", "zj", "ZJ", true},
		{"cn", " CN-ZJ ", "ZJ", true},
		{"CN", "cn-zj", "ZJ", true},
		{"CN", "浙江", "ZJ", true},
		{"CN", "浙江省", "ZJ", true},
		{"CN", "Zhejiang", "ZJ", true},
		{"CN", "zhejiang", "ZJ", true},
		{"CN", "Zhejiang Sheng", "ZJ", true},
		{"CN", "Zhejiang Province", "ZJ", true},
		{"CN", "33", "ZJ", true},
		{"CN", "CN-33", "ZJ", true},
		{"CN", "11", "BJ", true},
		{"CN", "北京市", "BJ", true},
		{"CN", "Beijing Shi", "BJ", true},
		{"CN", "Beijing Municipality", "BJ", true},
		{"CN", "上海", "SH", true},
		{"CN", "重庆市", "CQ", true},
		{"CN", "内蒙古", "NM", true},
		{"CN", "内蒙古自治区", "NM", true},
		{"CN", "Inner Mongolia", "NM", true},
		{"CN", "Nei Mongol", "NM", true},
		{"CN", "Nei Mongol Zizhiqu", "NM", true},
		{"CN", "西藏", "XZ", true},
		{"CN", "Tibet", "XZ", true},
		{"CN", "Xizang", "XZ", true},
		{"CN", "广西壮族自治区", "GX", true},
		{"CN", "Guangxi Zhuangzu Zizhiqu", "GX", true},
		{"CN", "宁夏回族自治区", "NX", true},
		{"CN", "Ningxia Hui Autonomous Region", "NX", true},
		{"CN", "新疆维吾尔自治区", "XJ", true},
		{"CN", "Xinjiang Uygur Zizhiqu", "XJ", true},
		{"CN", "香港", "HK", true},
		{"CN", "Hong Kong", "HK", true},
		{"CN", "香港特别行政区", "HK", true},
		{"CN", "澳门", "MO", true},
		{"CN", "Macau", "MO", true},
		{"CN", "Macao", "MO", true},
		{"CN", "台湾", "TW", true},
		{"CN", "Taiwan", "TW", true},
		{"CN", "陕西", "SN", true},
		{"CN", "Shaanxi", "SN", true},
		{"CN", "山西", "SX", true},
		{"CN", "Shanxi", "SX", true},
		{"CN", "黑龙江省", "HL", true},
		{"CN", "44", "GD", true},
		{"CN", "", "", false},
		{"CN", "XX", "", false},
		{"CN", "Atlantis", "", false},
		{"CN", "99", "", false},
		{"US", "CA", "CA", true},
		{"US", "us-ca", "CA", true},
		{"US", "ny", "NY", true},
		{"CH", "ZH", "ZH", true},
		{"GB", "ENG", "ENG", true},
		{"FR", "75", "75", true},
		{"US", "CN-CA", "", false},
		{"US", "California", "", false},
		{"US", "", "", false},
		{"US", "C A", "", false},
		{"", "CA", "CA", true},
	}
	for _, tc := range tests {
		got, ok := NormalizeProvince(tc.country, tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeProvince(%q, %q) = %q, %v; want %q, %v", tc.country, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestProvinceTable(t *testing.T) {
	if len(cnProvinces) != 34 {
		t.Fatalf("Expected 34 provincial-level divisions, got %d", len(cnProvinces))
	}
	for _, p := range cnProvinces {
		for _, s := range []string{p.code, p.numeric, p.en, p.zh} {
			if got, ok := NormalizeProvince("CN", s); !ok || got != p.code {
				t.Errorf("NormalizeProvince(CN, %q) = %q, %v; want %q", s, got, ok, p.code)
			}
		}
		if got := ProvinceName("cn", p.code); got != p.en {
			t.Errorf("ProvinceName(cn, %s) = %q, want %q", p.code, got, p.en)
		}
		if got := ProvinceNameZH("CN", p.code); got != p.zh {
			t.Errorf("ProvinceNameZH(CN, %s) = %q, want %q", p.code, got, p.zh)
		}
	}
	if got := ProvinceName("US", "CA"); got != "" {
		t.Errorf("ProvinceName(US, CA) = %q, want empty", got)
	}
	if got := ProvinceName("CN", "XX"); got != "" {
		t.Errorf("ProvinceName(CN, XX) = %q, want empty", got)
	}
}

func TestContinentOf(t *testing.T) {
	tests := map[string]string{
		"CN": "AS", "cn": "AS", "HK": "AS", "JP": "AS", "DE": "EU", "GB": "EU", "RU": "EU", "US": "NA",
		"CA": "NA", "MX": "NA", "BR": "SA", "AR": "SA", "AU": "OC", "NZ": "OC", "ZA": "AF", "EG": "AF",
		"AQ": "AN", "": "", "ZZ": "", "USA": "",
	}
	for in, want := range tests {
		if got := ContinentOf(in); got != want {
			t.Errorf("ContinentOf(%q) = %q, want %q", in, got, want)
		}
	}
	seen := map[string]bool{}
	for cont, list := range continentCountries {
		for _, cc := range splitFields(list) {
			if seen[cc] {
				t.Errorf("Country %s listed twice (again in %s)", cc, cont)
			}
			seen[cc] = true
		}
	}
	// 249 ISO 3166-1 codes plus XK (Kosovo), which MaxMind uses.
	if len(seen) != 250 {
		t.Errorf("Expected 250 countries, got %d", len(seen))
	}
}
