package test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// chinaXDB writes the ip2region pair: an IPv4 file placing the /24s the
// .ipdb tests place (gdRegion for 1.0.2.0/24) and an IPv6 file placing
// 240e::/20 in Guangdong.
func chinaXDB(t *testing.T, dir, gdRegion string) (v4, v6 string) {
	v4 = testsupport.WriteIP2Region(t, dir, "v4.xdb", []testsupport.XDBRow{
		{Network: "1.0.1.0/24", Country: "中国", Province: "浙江省", City: "杭州市", ISP: "电信", ISO: "CN"},
		{Network: "1.0.2.0/24", Country: "中国", Province: gdRegion, City: "广州市", ISP: "电信", ISO: "CN"},
		{Network: "1.0.3.0/24", Country: "中国", Province: "上海", ISP: "联通", ISO: "CN"},
	})
	v6 = testsupport.WriteIP2Region(t, dir, "v6.xdb", []testsupport.XDBRow{
		{Network: "240e::/20", Country: "中国", Province: "广东省", ISP: "电信", ISO: "CN"},
	})
	return v4, v6
}

// TestIP2Region: the ip2region files place the clients MaxMind knows only
// as China, in both families, say so in gslb/geo_source, count
// disagreements, show their build time, and reload; a corrupt file is
// rejected and the old one keeps serving.
func TestIP2Region(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, _ := chinaDBs(t, dir, "广东")
	v4, v6 := chinaXDB(t, dir, "广东省")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	before := counterValue(t, "coredns_gslb_geo_disagreements_total", "field", "province")
	s := startServer(t, corefile(city, "", nodes, "ip2region "+v6+" "+v4+"\nreload 1s"))
	tests := []struct {
		ecs, want, province, source string
	}{
		{"1.0.1.0/24", "192.0.2.10", "ZJ", "ip2region"},
		{"1.0.2.0/24", "192.0.2.20", "GD", "ip2region"},
		{"1.0.9.0/24", "", "-", "db"},
	}
	for _, tc := range tests {
		r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, tc.ecs))
		if tc.want != "" && answerOf(r) != tc.want {
			t.Errorf("%s: answer %s, want %s", tc.ecs, answerOf(r), tc.want)
		}
		checkLabels(t, l, map[string]string{"province": tc.province, "geo_source": tc.source})
	}
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "240e:10::/56"))
	checkLabels(t, l, map[string]string{"province": "GD", "isp": "telecom", "geo_source": "ip2region"})
	// MaxMind says Beijing, ip2region Shanghai: it decides, and the
	// disagreement is counted.
	_, l = queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.0.3.0/24"))
	checkLabels(t, l, map[string]string{"province": "SH", "isp": "unicom", "geo_source": "ip2region"})
	if d := counterValue(t, "coredns_gslb_geo_disagreements_total", "field", "province") - before; d != 1 {
		t.Errorf("Province disagreements counted %v, want 1", d)
	}
	if v := counterValue(t, "coredns_gslb_geo_database_build_timestamp_seconds", "db", "ip2region"); v != 1700000000 {
		t.Errorf("ip2region build timestamp %v, want 1700000000", v)
	}

	bad := filepath.Join(dir, "bad.xdb")
	if err := os.WriteFile(bad, []byte("not an xdb"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bad, v4); err != nil {
		t.Fatal(err)
	}
	logs.line(t, "Rejected reload, keeping the previous version: ip2region")
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.0/24")); got != "192.0.2.20" {
		t.Errorf("After a corrupt xdb: answer %s, want the old database's 192.0.2.20", got)
	}
	chinaXDB(t, dir, "浙江省")
	waitFor(t, "the reloaded xdb", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.2.7/32"))
		return got == "192.0.2.10", got
	})
}

// TestIP2RegionUnderIPDB: where both Chinese databases place an address,
// the .ipdb decides; ip2region alone is enough to serve.
func TestIP2RegionUnderIPDB(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, ip := chinaDBs(t, dir, "广东")
	v4, _ := chinaXDB(t, dir, "浙江省")
	nodes := writeFile(t, dir, "nodes.yaml", chinaNodes)
	s := startServer(t, corefile(city, "", nodes, "ipdb "+ip+"\nip2region "+v4))
	r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.0.2.0/24"))
	if answerOf(r) != "192.0.2.20" {
		t.Errorf("Answer %s, want the .ipdb's Guangdong node 192.0.2.20", answerOf(r))
	}
	checkLabels(t, l, map[string]string{"province": "GD", "geo_source": "ipdb"})

	alone := startServer(t, "example.org:0 {\n bind 127.0.0.1\n gslb {\n  ip2region "+v4+"\n  nodes "+nodes+"\n }\n}")
	if got := answerOf(ask(t, alone, "www.example.org", dns.TypeA, "1.0.2.0/24")); got != "192.0.2.10" {
		t.Errorf("ip2region alone: answer %s, want 192.0.2.10", got)
	}
}

// listNodes: a telecom and a unicom node in Zhejiang.
const listNodes = `nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-unicom, ipv4: [192.0.2.11], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16}
records:
  - name: www.example.org
`

// TestCarrierLists: a list's carrier wins over both databases' for the
// addresses it holds, in either family, and names the list in
// gslb/geo_source; the directory is reloaded (a changed list, a new
// list), and a bad list is rejected while the old lists keep serving.
func TestCarrierLists(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, ip := chinaDBs(t, dir, "广东")
	v4, v6 := chinaXDB(t, dir, "广东省")
	lists := filepath.Join(dir, "lists")
	if err := os.Mkdir(lists, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, lists, "unicom.txt", "# from BGP\n1.0.1.0/25\n")
	writeFile(t, lists, "unicom6.txt", "240e:0:8000::/33\n")
	writeFile(t, lists, "china.txt", "1.0.0.0/8\n") // all of China: skipped
	nodes := writeFile(t, dir, "nodes.yaml", listNodes)
	s := startServer(t, corefile(city, "", nodes, "ipdb "+ip+"\nip2region "+v4+" "+v6+"\ncarrier_lists "+lists+"\nreload 1s"))
	logs.line(t, "carrier_lists: 2 lists")
	tests := []struct {
		ecs, want, isp, source string
	}{
		{"1.0.1.0/25", "192.0.2.11", "unicom", "list:unicom"}, // the .ipdb and ip2region say telecom
		{"1.0.1.200/32", "192.0.2.10", "telecom", "ipdb"},
		{"240e:0:8000::/48", "", "unicom", "list:unicom6"},
		{"240e::/48", "", "telecom", "ip2region"},
	}
	for _, tc := range tests {
		r, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, tc.ecs))
		if tc.want != "" && answerOf(r) != tc.want {
			t.Errorf("%s: answer %s, want %s", tc.ecs, answerOf(r), tc.want)
		}
		checkLabels(t, l, map[string]string{"isp": tc.isp, "geo_source": tc.source})
	}

	// A bad line is rejected, naming the file and the line; the old lists
	// keep serving.
	writeFile(t, lists, "unicom.txt", "1.0.1.0/24\n1.0.1.300/32\n")
	logs.line(t, "unicom.txt:2")
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.1.200/32")); got != "192.0.2.10" {
		t.Errorf("After a bad list: answer %s, want the old lists' 192.0.2.10", got)
	}
	// A fixed list and a new list are loaded.
	writeFile(t, lists, "unicom.txt", "1.0.1.0/24\n")
	writeFile(t, lists, "cmcc.txt", "1.0.2.0/24\n")
	waitFor(t, "the reloaded lists", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "1.0.1.201/32"))
		return got == "192.0.2.11", got
	})
	_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.0.2.0/24"))
	checkLabels(t, l, map[string]string{"province": "GD", "isp": "mobile", "geo_source": "list:cmcc"})
	// The new list is watched too: an edit in place (the directory does
	// not change) is loaded.
	f, err := os.OpenFile(filepath.Join(lists, "cmcc.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("1.0.3.0/24\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitFor(t, "the edited new list", func() (bool, string) {
		_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.0.3.0/24"))
		return l["gslb/geo_source"] == "list:cmcc", l["gslb/geo_source"]
	})
}
