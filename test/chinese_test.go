package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// chinaNodes: one telecom node in each of Zhejiang, Guangdong and Beijing.
const chinaNodes = `nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: gz-telecom, ipv4: [192.0.2.20], country: CN, province: GD, isp: telecom, lat: 23.13, lon: 113.26}
  - {id: bj-unicom, ipv4: [192.0.2.30], country: CN, province: BJ, isp: unicom, lat: 39.90, lon: 116.41}
records:
  - name: www.example.org
`

// chinaDBs writes a MaxMind City database that knows 1.0.0.0/8 only as
// China, and an IPIP.net database that places two /24s in provinces.
func chinaDBs(t *testing.T, dir string, gdRegion string) (city, ip string) {
	city, _ = testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN"},
		{Network: "1.0.3.0/24", Country: "CN", Province: "BJ", City: "Beijing", Lat: 39.9, Lon: 116.4},
	}, nil)
	ip = testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.0.1.0/24", CountryName: "中国", RegionName: "浙江", CityName: "杭州", ISP: "电信", CCode: "CN"},
		{Network: "1.0.2.0/24", CountryName: "中国", RegionName: gdRegion, CityName: "广州", ISP: "电信", CCode: "CN"},
		{Network: "1.0.3.0/24", CountryName: "中国", RegionName: "上海", ISP: "联通", CCode: "CN"},
	})
	return city, ip
}

// TestIPDB: the IPIP.net database places the clients MaxMind knows only as
// China, says so in gslb/geo_source, counts disagreements, shows its
// build time, and reloads.
func TestIPDB(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, ip := chinaDBs(t, dir, "广东")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	before := counterValue(t, "coredns_gslb_geo_disagreements_total", "field", "province")
	s := startServer(t, corefile(city, "", nodes, "ipdb "+ip+"\nreload 1s"))
	tests := []struct {
		ecs, want, province, source string
	}{
		{"1.0.1.0/24", "192.0.2.10", "ZJ", "ipdb"},
		{"1.0.2.0/24", "192.0.2.20", "GD", "ipdb"},
		{"1.0.9.0/24", "", "-", "db"},
	}
	for _, tc := range tests {
		r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, tc.ecs))
		if tc.want != "" && answerOf(r) != tc.want {
			t.Errorf("%s: answer %s, want %s", tc.ecs, answerOf(r), tc.want)
		}
		checkLabels(t, l, map[string]string{"province": tc.province, "geo_source": tc.source})
	}
	// MaxMind says Beijing, the IPIP.net database Shanghai: it decides, and
	// the disagreement is counted.
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.0.3.0/24"))
	checkLabels(t, l, map[string]string{"province": "SH", "isp": "unicom", "geo_source": "ipdb"})
	if d := counterValue(t, "coredns_gslb_geo_disagreements_total", "field", "province") - before; d != 1 {
		t.Errorf("Province disagreements counted %v, want 1", d)
	}
	if v := counterValue(t, "coredns_gslb_geo_database_build_timestamp_seconds", "db", "ipdb"); v != 1700000000 {
		t.Errorf("ipdb build timestamp %v, want 1700000000", v)
	}

	// A corrupt file is rejected; a good one is loaded.
	if err := os.WriteFile(filepath.Join(dir, "bad.ipdb"), []byte("not an ipdb"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "bad.ipdb"), ip); err != nil {
		t.Fatal(err)
	}
	logs.line(t, "Rejected reload")
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.0/24")); got != "192.0.2.20" {
		t.Errorf("After a corrupt ipdb: answer %s, want the old database's 192.0.2.20", got)
	}
	chinaDBs(t, dir, "浙江")
	waitFor(t, "the reloaded ipdb", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.7/32"))
		return got == "192.0.2.10", got
	})
}

// TestIPDBWithoutGeoIP: an IPIP.net database alone is enough.
func TestIPDBWithoutGeoIP(t *testing.T) {
	dir := t.TempDir()
	_, ip := chinaDBs(t, dir, "广东")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	s := startServer(t, fmt.Sprintf("example.org:0 {\n bind 127.0.0.1\n gslb {\n  ipdb %s\n  nodes %s\n }\n}", ip, nodes))
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.0/24")); got != "192.0.2.20" {
		t.Errorf("Answer %s, want 192.0.2.20", got)
	}
}

// TestOverrides: a location correction and a pin through a real CoreDNS,
// their tier and source, the scope around them, expiry, and reload.
func TestOverrides(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, ip := chinaDBs(t, dir, "广东")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	// Far enough that a loaded machine starts the server and asks before
	// it; the test then waits for it.
	expires := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339)
	ov := writeFile(t, dir, "overrides.yaml", `overrides:
  - cidr: 1.0.1.128/25
    location: {country: CN, province: GD, isp: telecom}
    note: dial test says Guangzhou
  - cidr: 1.0.2.0/24
    nodes: [bj-unicom]
  - cidr: 1.0.1.64/26
    nodes: [bj-unicom]
    expires: `+expires+`
`)
	s := startServer(t, corefile(city, "", nodes, fmt.Sprintf("ipdb %s\noverrides %s\nreload 1s", ip, ov)))
	tests := []struct {
		ecs, want, tier, source string
		scope                   uint8
	}{
		{"1.0.1.200/32", "192.0.2.20", "province_isp", "override", 25}, // corrected to Guangdong
		{"1.0.2.0/24", "192.0.2.30", "override", "ipdb", 24},           // pinned to Beijing
		{"1.0.1.70/32", "192.0.2.30", "override", "ipdb", 26},          // pinned until it expires
		{"1.0.1.0/32", "192.0.2.10", "province_isp", "lru", 26},        // beside both: the scope stops short of them
	}
	for _, tc := range tests {
		q := newQuery(t, "www.example.org", dns.TypeA, tc.ecs)
		r, l := queryLabels(t, s, logs, q)
		if got := answerOf(r); got != tc.want {
			t.Errorf("%s: answer %s, want %s", tc.ecs, got, tc.want)
		}
		checkLabels(t, l, map[string]string{"tier": tc.tier, "geo_source": tc.source})
		if e := replyECS(r); e == nil || e.SourceScope != tc.scope {
			t.Errorf("%s: reply ECS %v, want scope %d", tc.ecs, e, tc.scope)
		}
	}
	// The pin expires: the ladder decides again.
	waitFor(t, "the pin to expire", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.1.70/32"))
		return got == "192.0.2.10", got
	})

	// A bad file is rejected and the old overrides keep working; a good
	// one is loaded.
	writeFile(t, dir, "overrides.yaml", "overrides:\n  - cidr: 1.0.2.0/24\n    nodes: [nobody]\n")
	logs.line(t, `overrides[0]: field nodes: unknown node "nobody"`)
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.0/24")); got != "192.0.2.30" {
		t.Errorf("After a rejected file: answer %s, want the pin's 192.0.2.30", got)
	}
	writeFile(t, dir, "overrides.yaml", "overrides:\n  - cidr: 1.0.2.0/24\n    nodes: [hz-telecom]\n")
	waitFor(t, "the reloaded overrides", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.0/24"))
		return got == "192.0.2.10", got
	})
}

// TestOverridesBadAtStartup: the error names the Corefile, the file, the
// line and the field.
func TestOverridesBadAtStartup(t *testing.T) {
	dir := t.TempDir()
	city, _ := chinaDBs(t, dir, "广东")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	ov := writeFile(t, dir, "overrides.yaml", "overrides:\n  - cidr: 1.0.2.0/24\n    location: {country: CN, province: Atlantis}\n")
	mu.Lock()
	inst, err := caddy.Start(input(corefile(city, "", nodes, "overrides "+ov)))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
		t.Fatalf("Started with a bad overrides file")
	}
	for _, want := range []string{"Corefile:", ov, "line 3: overrides[0]: field location.province"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Error %q does not contain %q", err, want)
		}
	}
}
