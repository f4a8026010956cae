package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/overrides"
)

// auditFixture writes a block whose four sources disagree on purpose:
// 1.0.1.0/24 all agree (Zhejiang telecom); on 1.0.2.0/23 MaxMind and
// ip2region say Guangdong, the .ipdb (which decides) Zhejiang; 1.0.4.0/24
// is in the unicom list while the databases say telecom.
func auditFixture(t *testing.T) (dir, corefilePath string) {
	dir = t.TempDir()
	city, _ := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.1.0/24", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
		{Network: "1.0.2.0/23", Country: "CN", Province: "GD", City: "Guangzhou", Lat: 23.13, Lon: 113.26},
		{Network: "1.0.4.0/24", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	}, nil)
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.0.1.0/24", CountryName: "中国", RegionName: "浙江", ISP: "电信", CCode: "CN"},
		{Network: "1.0.2.0/23", CountryName: "中国", RegionName: "浙江", ISP: "电信", CCode: "CN"},
		{Network: "1.0.4.0/24", CountryName: "中国", RegionName: "浙江", ISP: "电信", CCode: "CN"},
	})
	xdb := testsupport.WriteIP2Region(t, dir, "v4.xdb", []testsupport.XDBRow{
		{Network: "1.0.1.0/24", Country: "中国", Province: "浙江省", ISP: "电信", ISO: "CN"},
		{Network: "1.0.2.0/23", Country: "中国", Province: "广东省", ISP: "电信", ISO: "CN"},
		{Network: "1.0.4.0/24", Country: "中国", Province: "浙江省", ISP: "电信", ISO: "CN"},
	})
	lists := filepath.Join(dir, "lists")
	if err := os.Mkdir(lists, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, lists, "unicom.txt", "1.0.4.0/24\n")
	writeFile(t, lists, "chinanet.txt", "1.0.1.0/24\n1.0.2.0/23\n")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	corefilePath = writeFile(t, dir, "Corefile", fmt.Sprintf(`example.org {
    gslb {
        geoip %s
        ipdb %s
        ip2region %s
        carrier_lists %s
        nodes %s
    }
}
`, city, ip, xdb, lists, nodes))
	return dir, corefilePath
}

// auditJSON is what the test reads of gslb audit -json.
type auditJSON struct {
	Sources []string `json:"sources"`
	Units   int      `json:"units"`
	Groups  []struct {
		Province, Carrier string
		Units             int
		ProvinceCompared  int `json:"province_compared"`
		ProvinceAgree     int `json:"province_agree"`
		CarrierCompared   int `json:"carrier_compared"`
		CarrierAgree      int `json:"carrier_agree"`
	} `json:"groups"`
	Disagreements []struct {
		First, Last string
		Units       int
		Fields      []string
		Odd         string
		UsedBy      string `json:"used_by"`
		Used        struct{ Province, Carrier string }
	} `json:"disagreements"`
	Quality []struct {
		CIDR          string  `json:"cidr"`
		Province      string  `json:"province"`
		OtherProvince string  `json:"other_province"`
		OwnRTTMs      float64 `json:"own_rtt_ms"`
	} `json:"quality"`
}

// TestAudit: gslb audit compares MaxMind, the .ipdb, ip2region and the
// carrier lists, counts agreement per province and carrier, merges the
// disagreeing /24s into ranges, flags a range dial tests place nearer
// another province, and drafts overrides that load.
func TestAudit(t *testing.T) {
	dir, cf := auditFixture(t)
	in := writeFile(t, dir, "nets.txt", "# carrier /24s\n1.0.1.0/24\n1.0.2.0/23\n1.0.4.7\n")
	quality := writeFile(t, dir, "rtt.csv", "cidr,node,rtt_ms\n"+
		"1.0.1.0/24,hz-telecom,80\n1.0.1.0/24,gz-telecom,12\n"+ // placed in Zhejiang, near Guangdong
		"1.0.2.0/24,hz-telecom,30\n1.0.2.0/24,gz-telecom,25\n")
	out := filepath.Join(dir, "draft.yaml")
	stdout, stderr, code := runTool(t, "audit", "-conf", cf, "-json", "-quality", quality, "-overrides", out, in)
	if code != 0 {
		t.Fatalf("audit exit %d: %s", code, stderr)
	}
	var r auditJSON
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	if r.Units != 4 || strings.Join(r.Sources, ",") != "geoip,ipdb,ip2region,list" {
		t.Errorf("units %d sources %v, want 4 of geoip,ipdb,ip2region,list", r.Units, r.Sources)
	}
	groups := map[string]string{}
	for _, g := range r.Groups {
		groups[g.Province+"/"+g.Carrier] = fmt.Sprintf("%d units, province %d/%d, carrier %d/%d", g.Units, g.ProvinceAgree, g.ProvinceCompared, g.CarrierAgree, g.CarrierCompared)
	}
	want := map[string]string{
		"ZJ/telecom": "3 units, province 1/3, carrier 3/3",
		"ZJ/unicom":  "1 units, province 1/1, carrier 0/1",
	}
	if fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Errorf("groups %v, want %v", groups, want)
	}
	if len(r.Disagreements) != 2 {
		t.Fatalf("disagreements %+v, want 2 ranges", r.Disagreements)
	}
	d := r.Disagreements[0]
	if d.First != "1.0.2.0" || d.Last != "1.0.3.255" || d.Units != 2 || d.Odd != "ipdb" || strings.Join(d.Fields, ",") != "province" || d.UsedBy != "list:chinanet" {
		t.Errorf("first range %+v, want 1.0.2.0-1.0.3.255, 2 units, province, odd ipdb", d)
	}
	d = r.Disagreements[1]
	if d.First != "1.0.4.7" || d.Odd != "list" || strings.Join(d.Fields, ",") != "carrier" || d.Used.Carrier != "unicom" || d.UsedBy != "list:unicom" {
		t.Errorf("second range %+v, want 1.0.4.7, carrier, odd list, used unicom", d)
	}
	if len(r.Quality) != 1 || r.Quality[0].CIDR != "1.0.1.0/24" || r.Quality[0].Province != "ZJ" || r.Quality[0].OtherProvince != "GD" || r.Quality[0].OwnRTTMs != 80 {
		t.Errorf("quality %+v, want 1.0.1.0/24 placed in ZJ, near GD", r.Quality)
	}

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ov, err := overrides.Parse(out, data, func(string) bool { return true })
	if err != nil {
		t.Fatalf("draft overrides do not load: %v\n%s", err, data)
	}
	if ov.Len() != 2 || !strings.Contains(string(data), "cidr: 1.0.2.0/23") || !strings.Contains(string(data), "province: GD") ||
		!strings.Contains(string(data), "note: 'audit draft: geoip GD/-, ip2region GD/telecom, list -/telecom; against them ipdb ZJ/telecom, and the server uses ZJ/telecom (list:chinanet)") ||
		!strings.Contains(string(data), "cidr: 1.0.4.7/32") {
		t.Errorf("draft overrides:\n%s", data)
	}
	// The draft loads as the block's overrides.
	_, stderr, code = runTool(t, "check", "-conf", cf, "-overrides", out)
	if code != 0 {
		t.Errorf("check with the draft: exit %d: %s", code, stderr)
	}

	// The text report, and a sample of the carrier lists' own networks.
	stdout, stderr, code = runTool(t, "audit", "-conf", cf, "-sample", "3")
	if code != 0 || !strings.Contains(stdout, "Units      3") || !strings.Contains(stdout, "1.0.2.0-1.0.3.255  2 units") {
		t.Errorf("audit -sample 3: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestAuditErrors: bad usage exits 2, bad input 1 with its file and line.
func TestAuditErrors(t *testing.T) {
	dir, cf := auditFixture(t)
	bad := writeFile(t, dir, "bad.txt", "1.0.1.0/24\nnot-an-address\n")
	badQ := writeFile(t, dir, "q.csv", "1.0.1.0/24,nowhere,5\n")
	good := writeFile(t, dir, "good.txt", "1.0.1.0/24\n")
	wide := writeFile(t, dir, "wide.txt", "0.0.0.0/0\n")
	tests := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"audit", "-conf", cf}, 2, "usage: gslb audit"},
		{[]string{"audit", "-conf", cf, "-sample", "x"}, 2, "invalid value"},
		{[]string{"audit", "-conf", cf, bad}, 1, `bad.txt:2: "not-an-address" is not an address or a prefix`},
		{[]string{"audit", "-conf", cf, "-quality", badQ, good}, 1, `q.csv:1: field node: "nowhere" is not in the node table`},
		{[]string{"audit", "-conf", cf, filepath.Join(dir, "missing.txt")}, 1, "missing.txt"},
		{[]string{"audit", "-conf", cf, wide}, 1, "wide.txt:1: 0.0.0.0/0 is wider than 65536 /24 units"},
	}
	for _, tc := range tests {
		_, stderr, code := runTool(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args[3:], code, stderr, tc.code, tc.err)
		}
	}
}
