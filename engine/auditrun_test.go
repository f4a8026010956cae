package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/overrides"

	yaml "go.yaml.in/yaml/v3"
)

// auditEngine loads a block whose sources disagree on purpose, over the
// fixture's MaxMind City (1.0.0.0/16 Zhejiang, 2.0.0.0/24 Shanghai):
//   - 1.0.0.0/22 and 1.0.12.0/22: all agree, Zhejiang telecom;
//   - 1.0.4.0/22: ip2region alone says Jiangsu (the .ipdb, which decides,
//     agrees with MaxMind: nothing to draft);
//   - 1.0.8.0/22: the .ipdb alone says Jiangsu against the others;
//   - 2.0.0.0/24: the unicom list against the databases' telecom.
func auditEngine(t *testing.T, lists bool) (*engine.Engine, string) {
	t.Helper()
	dir := testsupport.Fixture(t, engineNodes)
	ip := testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.0.0.0/21", CountryName: "中国", RegionName: "浙江", ISP: "电信", CCode: "CN"},
		{Network: "1.0.8.0/22", CountryName: "中国", RegionName: "江苏", ISP: "电信", CCode: "CN"},
		{Network: "1.0.12.0/22", CountryName: "中国", RegionName: "浙江", ISP: "电信", CCode: "CN"},
		{Network: "2.0.0.0/24", CountryName: "中国", RegionName: "上海", ISP: "电信", CCode: "CN"},
	})
	xdb := testsupport.WriteIP2Region(t, dir, "v4.xdb", []testsupport.XDBRow{
		{Network: "1.0.0.0/22", Country: "中国", Province: "浙江省", ISP: "电信", ISO: "CN"},
		{Network: "1.0.4.0/22", Country: "中国", Province: "江苏省", ISP: "电信", ISO: "CN"},
		{Network: "1.0.8.0/21", Country: "中国", Province: "浙江省", ISP: "电信", ISO: "CN"},
		{Network: "2.0.0.0/24", Country: "中国", Province: "上海", ISP: "电信", ISO: "CN"},
	})
	extra := "        ipdb " + ip + "\n        ip2region " + xdb + "\n"
	if lists {
		ld := filepath.Join(dir, "lists")
		if err := os.Mkdir(ld, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, ld, "chinanet.txt", "1.0.0.0/20\n")
		writeFile(t, ld, "unicom.txt", "2.0.0.0/24\n")
		extra += "        carrier_lists " + ld + "\n"
	}
	cf := writeFile(t, dir, "Corefile", "example.org {\n    gslb {\n        geoip "+dir+"/city.mmdb\n        nodes "+dir+"/nodes.yaml\n"+extra+"    }\n}\n")
	return newEngine(t, engine.Config{Corefile: cf}), dir
}

// TestAuditSources: the audit compares every source per /24, merges
// adjacent /24s that disagree the same way into one range, names the odd
// source, and drafts an override only where the server's own source is
// the odd one.
func TestAuditSources(t *testing.T) {
	e, dir := auditEngine(t, true)
	in := writeFile(t, dir, "nets.txt", "# Zhejiang\n1.0.0.0/20   first field only\n\n1.0.3.0/24\n")
	r, err := e.Audit(context.Background(), engine.AuditConfig{Inputs: []string{in, "-"}, Stdin: strings.NewReader("2.0.0.5 # Shanghai\n")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Units != 17 || strings.Join(r.Sources, ",") != "geoip,ipdb,ip2region,list" {
		t.Errorf("Expected 17 units (16 /24s, the repeated one once, one address) of four sources, got %d of %v", r.Units, r.Sources)
	}
	total := 0
	for i, g := range r.Groups {
		total += g.Units
		if g.ProvinceAgree > g.ProvinceCompared || g.CarrierAgree > g.CarrierCompared || g.ProvinceCompared > g.Units {
			t.Errorf("Group %+v counts more agreement than comparisons", g)
		}
		if i > 0 && r.Groups[i-1].Units < g.Units {
			t.Errorf("Expected groups by units, most first: %+v", r.Groups)
		}
	}
	if total != r.Units {
		t.Errorf("Expected the groups to count every unit, got %d of %d", total, r.Units)
	}
	byFirst := map[string]engine.AuditRange{}
	for _, d := range r.Disagreements {
		byFirst[d.First] = d
	}
	if len(r.Disagreements) != 3 {
		t.Fatalf("Expected three ranges, got %+v", r.Disagreements)
	}
	x := byFirst["1.0.4.0"]
	if x.Last != "1.0.7.255" || x.Units != 4 || x.Odd != "ip2region" || !slices.Equal(x.Fields, []string{"province"}) || x.Used.Province != "ZJ" {
		t.Errorf("Expected 1.0.4.0-1.0.7.255, 4 units, ip2region odd on province, got %+v", x)
	}
	x = byFirst["1.0.8.0"]
	if x.Last != "1.0.11.255" || x.Units != 4 || x.Odd != "ipdb" || x.Used.Province != "JS" || x.Says["ipdb"].Province != "JS" || x.Says["ip2region"].Province != "ZJ" {
		t.Errorf("Expected 1.0.8.0-1.0.11.255, 4 units, the deciding ipdb odd, got %+v", x)
	}
	x = byFirst["2.0.0.5"]
	if x.Odd != "list" || !slices.Equal(x.Fields, []string{"carrier"}) || x.Used.Carrier != "unicom" || !strings.HasPrefix(x.UsedBy, "list") {
		t.Errorf("Expected the unicom list odd on the carrier and used, got %+v", x)
	}
	drafts := map[string]overrides.EntryYAML{}
	for _, o := range r.Overrides {
		drafts[o.CIDR] = o
	}
	if len(r.Overrides) != 2 {
		t.Fatalf("Expected two drafts (the ipdb's and the list's ranges), got %+v", r.Overrides)
	}
	if d := drafts["1.0.8.0/22"]; d.Location == nil || d.Location.Province != "ZJ" || d.Location.ISP != "telecom" || !strings.Contains(d.Note, "against them ipdb JS/telecom") {
		t.Errorf("Expected 1.0.8.0/22 drafted to Zhejiang telecom, got %+v", d)
	}
	if d := drafts["2.0.0.5/32"]; d.Location == nil || d.Location.Province != "SH" || d.Location.ISP != "telecom" {
		t.Errorf("Expected 2.0.0.5/32 drafted to Shanghai telecom, got %+v", d)
	}
	// The drafts load as an overrides file.
	data, err := yaml.Marshal(map[string]any{"overrides": r.Overrides})
	if err != nil {
		t.Fatal(err)
	}
	if ov, err := overrides.Parse("draft.yaml", data, func(string) bool { return true }); err != nil || ov.Len() != 2 {
		t.Errorf("Expected the drafts to load, got %v\n%s", err, data)
	}
	// With the drafts as the block's overrides, the server decides those
	// ranges as the other sources say, and nothing is left to draft.
	draft := writeFile(t, dir, "draft.yaml", string(data))
	cf := writeFile(t, dir, "Corefile", strings.Replace(mustRead(t, filepath.Join(dir, "Corefile")), "    }\n}", "        overrides "+draft+"\n    }\n}", 1))
	fixed := newEngine(t, engine.Config{Corefile: cf})
	r, err = fixed.Audit(context.Background(), engine.AuditConfig{Inputs: []string{in, "-"}, Stdin: strings.NewReader("2.0.0.5\n")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Disagreements {
		if d.First == "1.0.8.0" && (d.Used.Province != "ZJ" || !strings.HasPrefix(d.UsedBy, "override")) {
			t.Errorf("Expected the override to decide 1.0.8.0/22, got %+v", d)
		}
	}
	if len(r.Overrides) != 0 {
		t.Errorf("Expected nothing left to draft, got %+v", r.Overrides)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuditSample: with no addresses the audit samples the carrier lists'
// own networks evenly, at most all of them; without lists it says what it
// needs.
func TestAuditSample(t *testing.T) {
	e, _ := auditEngine(t, true)
	ctx := context.Background()
	r, err := e.Audit(ctx, engine.AuditConfig{Sample: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r.Units != 5 {
		t.Errorf("Expected 5 sampled units, got %d", r.Units)
	}
	all, err := e.Audit(ctx, engine.AuditConfig{Sample: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// 1.0.0.0/20 is 16 /24s, 2.0.0.0/24 one.
	if all.Units != 17 || len(all.Disagreements) != 3 {
		t.Errorf("Expected all 17 /24s of the lists with the three ranges, got %d units, %+v", all.Units, all.Disagreements)
	}
	noLists, _ := auditEngine(t, false)
	if _, err := noLists.Audit(ctx, engine.AuditConfig{Sample: 5}); err == nil || !strings.Contains(err.Error(), "carrier_lists") {
		t.Errorf("Expected -sample refused without carrier lists, got %v", err)
	}
	r, err = noLists.Audit(ctx, engine.AuditConfig{Inputs: []string{"-"}, Stdin: strings.NewReader("1.0.8.0/22\n")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Sources, ",") != "geoip,ipdb,ip2region" || r.Units != 4 || len(r.Disagreements) != 1 {
		t.Errorf("Expected three sources and one range without lists, got %v %d %+v", r.Sources, r.Units, r.Disagreements)
	}
	if _, err := e.Audit(ctx, engine.AuditConfig{}); err == nil || !strings.Contains(err.Error(), "no addresses") {
		t.Errorf("Expected an audit of nothing refused, got %v", err)
	}
}

// TestAuditInputErrors: a bad line is named by file and line; a prefix
// too wide to split, a missing file and a cancelled audit are errors.
func TestAuditInputErrors(t *testing.T) {
	e, dir := auditEngine(t, true)
	ctx := context.Background()
	for _, tc := range []struct{ body, want string }{
		{"1.0.0.0/24\nexample.org\n", "nets.txt:2: \"example.org\" is not an address or a prefix"},
		{"# wide\n2.0.0.0/7\n", "nets.txt:2: 2.0.0.0/7 is wider than"},
		{"2400::/31\n", "nets.txt:1: 2400::/31 is wider than"},
		{"fe80::1%eth0\n", "nets.txt:1:"},
		{strings.Repeat("1", 5000) + "\n", "nets.txt:1:"},
	} {
		p := writeFile(t, dir, "nets.txt", tc.body)
		if _, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{p}}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: expected an error with %q, got %v", tc.body[:min(len(tc.body), 20)], tc.want, err)
		}
	}
	if _, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{filepath.Join(dir, "missing.txt")}}); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("Expected a missing file named, got %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	p := writeFile(t, dir, "ok.txt", "1.0.0.0/20\n")
	if _, err := e.Audit(cancelled, engine.AuditConfig{Inputs: []string{p}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Expected a cancelled audit to stop, got %v", err)
	}
	// IPv6 prefixes split into /48s.
	r, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{"-"}, Stdin: strings.NewReader("2400::/46\n2400:0:1::7\n")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Units != 5 {
		t.Errorf("Expected 4 /48s and one address, got %d units", r.Units)
	}
}

// TestAuditQuality: measured round trips flag a range whose own
// province's best node is far slower than another province's; bad rows
// are named by line and field.
func TestAuditQuality(t *testing.T) {
	e, dir := auditEngine(t, true)
	ctx := context.Background()
	in := writeFile(t, dir, "nets.txt", "1.0.0.0/24\n")
	q := writeFile(t, dir, "rtt.csv", "cidr,node,rtt_ms\n"+
		"1.0.0.0/24, hz-a, 90\n1.0.0.0/24, hz-b, 70\n1.0.0.0/24, sh, 15\n"+ // Zhejiang, far nearer Shanghai
		"1.0.1.0/24, hz-a, 30\n1.0.1.0/24, sh, 20\n"+ // nearer, but not by the ratio
		"1.0.2.0/24, hz-a, 30\n1.0.2.0/24, sh, 14\n"+ // by the ratio, but not by QualityMinMs
		"# a comment\n3.0.0.0/24, sh, 500\n3.0.0.0/24, bj, 5\n") // no province: not judged
	r, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{in}, Quality: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Quality) != 1 {
		t.Fatalf("Expected one flag, got %+v", r.Quality)
	}
	f := r.Quality[0]
	if f.CIDR != "1.0.0.0/24" || f.Province != "ZJ" || f.OwnNode != "hz-b" || f.OwnRTTMs != 70 || f.OtherProvince != "SH" || f.OtherNode != "sh" || f.OtherRTTMs != 15 {
		t.Errorf("Expected 1.0.0.0/24 flagged with its best own and other node, got %+v", f)
	}
	if 30 < engine.QualityRatio*14 || 30-14 >= engine.QualityMinMs || 30 >= engine.QualityRatio*20 {
		t.Fatalf("The fixture's rows no longer straddle the thresholds")
	}
	for _, tc := range []struct{ body, want string }{
		{"cidr,node,rtt_ms\n1.0.0.0/24,nowhere,5\n", "rtt.csv:2: field node: \"nowhere\""},
		{"1.0.0.0/24,sh,fast\n", "rtt.csv:1: field rtt_ms"},
		{"1.0.0.0/24,sh,-3\n", "field rtt_ms"},
		{"1.0.0/24,sh,3\n", "rtt.csv:1: field cidr"},
		{"1.0.0.0/24,sh\n", "rtt.csv"},
	} {
		q := writeFile(t, dir, "rtt.csv", tc.body)
		if _, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{in}, Quality: q}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: expected an error with %q, got %v", tc.body, tc.want, err)
		}
	}
	if _, err := e.Audit(ctx, engine.AuditConfig{Inputs: []string{in}, Quality: filepath.Join(dir, "none.csv")}); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("Expected a missing measurements file named, got %v", err)
	}
}
