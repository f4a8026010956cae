package geo

import (
	"strings"
	"testing"
)

func splitFields(s string) []string { return strings.Fields(s) }

func TestCarrier(t *testing.T) {
	c := DefaultCarriers()
	tests := []struct {
		asn  uint32
		org  string
		want string
	}{
		{4134, "", Telecom},
		{4812, "", Telecom},
		{4809, "", Telecom},
		{23724, "", Telecom},
		{4811, "", Telecom},
		{4816, "", Telecom},
		{4837, "", Unicom},
		{9929, "", Unicom},
		{17621, "", Unicom},
		{17816, "", Unicom},
		{4808, "", Unicom},
		{17622, "", Unicom},
		{9808, "", Mobile},
		{56040, "", Mobile},
		{56048, "", Mobile},
		{24400, "", Mobile},
		{24444, "", Mobile},
		{24445, "", Mobile},
		{4538, "", Edu},
		{4565, "", Edu},
		{23910, "", Edu},
		{4134, "Some Reseller", Telecom},
		{64512, "CHINANET-BACKBONE", Telecom},
		{0, "Chinanet", Telecom},
		{0, "China Telecom (Group)", Telecom},
		{0, "CHINA UNICOM China169 Backbone", Unicom},
		{0, "China169 Backbone", Unicom},
		{0, "China Unicom Shanghai network", Unicom},
		{0, "China Mobile Communications Group Co., Ltd.", Mobile},
		{0, "CMNET-GD", Mobile},
		{0, "China Education and Research Network Center", Edu},
		{0, "CERNET2 IX", Edu},
		{0, "中国电信", Telecom},
		{0, "中国移动通信集团", Mobile},
		{15169, "Google LLC", "google llc"},
		{0, "  Example GmbH ", "example gmbh"},
		{0, "", ""},
		{64496, "", ""},
	}
	for _, tc := range tests {
		if got := c.Carrier(tc.asn, tc.org); got != tc.want {
			t.Errorf("Carrier(%d, %q) = %q, want %q", tc.asn, tc.org, got, tc.want)
		}
	}
	var nilTable *Carriers
	if got := nilTable.Carrier(4134, "Foo"); got != "foo" {
		t.Errorf("Nil table Carrier = %q, want %q", got, "foo")
	}
}

func TestCarriersExtend(t *testing.T) {
	base := DefaultCarriers()
	ext := base.Clone()
	ext.AddASN(64500, "电信")
	ext.AddASN(4134, "Mobile") // override a built-in
	ext.AddName("acme", "联通")
	ext.AddName("china mobile", "edu") // later patterns win
	tests := []struct {
		c    *Carriers
		asn  uint32
		org  string
		want string
	}{
		{ext, 64500, "", Telecom},
		{ext, 4134, "", Mobile},
		{ext, 0, "ACME Broadband", Unicom},
		{ext, 0, "China Mobile", Edu},
		{base, 64500, "", ""},
		{base, 4134, "", Telecom},
		{base, 0, "ACME Broadband", "acme broadband"},
		{base, 0, "China Mobile", Mobile},
	}
	for i, tc := range tests {
		if got := tc.c.Carrier(tc.asn, tc.org); got != tc.want {
			t.Errorf("Case %d: Carrier(%d, %q) = %q, want %q", i, tc.asn, tc.org, got, tc.want)
		}
	}
	var empty Carriers
	empty.AddASN(1, "cu")
	if got := empty.Carrier(1, ""); got != Unicom {
		t.Errorf("Zero Carriers after AddASN = %q, want %q", got, Unicom)
	}
}

func TestNormalizeCarrier(t *testing.T) {
	tests := map[string]string{
		"Telecom": Telecom, "电信": Telecom, "中国电信": Telecom, "ct": Telecom, " CT ": Telecom, "China Telecom": Telecom,
		"联通": Unicom, "中国联通": Unicom, "cu": Unicom, "Unicom": Unicom,
		"移动": Mobile, "中国移动": Mobile, "cm": Mobile, "CMCC": Mobile,
		"教育网": Edu, "edu": Edu, "CERNET": Edu,
		"  Some ISP ": "some isp", "": "",
	}
	for in, want := range tests {
		if got := NormalizeCarrier(in); got != want {
			t.Errorf("NormalizeCarrier(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCarrierTypos: a carriers: target that is a typo of a built-in word is
// an error (its clients would match no node of that carrier), a new
// carrier is not, and a word far from every known one gets no suggestion.
func TestCarrierTypos(t *testing.T) {
	c := DefaultCarriers()
	for _, tc := range []struct {
		asn     map[uint32]string
		names   map[string]string
		wantErr string
	}{
		{map[uint32]string{4134: "telcom"}, nil, `carriers.asn: 4134: carrier "telcom" looks like a typo of telecom`},
		{nil, map[string]string{"Chinanet": "unicon"}, `carriers.names: "Chinanet": carrier "unicon" looks like a typo of unicom`},
		{map[uint32]string{4134: "ctcc", 9808: "China Mobile"}, nil, ""},
		{map[uint32]string{17964: "drpeng"}, map[string]string{"Great Wall": "cstnet"}, ""},
	} {
		_, err := c.Extend(tc.asn, tc.names)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Extend(%v, %v): got %v, want %q", tc.asn, tc.names, err, tc.wantErr)
		}
	}
	if err := c.CheckCarrier("google", "google"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Expected no suggestion for a word far from every carrier, got %v", err)
	}
	if err := c.CheckCarrier("moblie", "moblie"); err == nil || !strings.Contains(err.Error(), "did you mean mobile?") {
		t.Errorf("Expected a suggestion for a typo, got %v", err)
	}
}
