package test

import (
	"flag"
	"fmt"
	"testing"

	"github.com/gslbdns/gslb/geo/carrierlist"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// operatorDBs are a City, an ASN and an IPIP.net database that put the
// fixture's 1.51.0.0/16 (cernet.txt: edu) and 1.119.178.0/23 (cmcc.txt
// and unicom.txt) in Zhejiang, at China Telecom.
func operatorDBs(t *testing.T, dir string) (city, asn, ip string) {
	t.Helper()
	city, asn = testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", City: "Hangzhou", Lat: 30.27, Lon: 120.16},
	}, []mmdbgen.ASN{
		{Network: "1.51.0.0/16", ASN: 4134, Org: "CHINANET-BACKBONE"},
		{Network: "1.119.178.0/23", ASN: 4134, Org: "CHINANET-BACKBONE"},
	})
	ip = testsupport.WriteIPDB(t, dir, []testsupport.IPDBRow{
		{Network: "1.51.0.0/16", CountryName: "中国", RegionName: "浙江", CityName: "杭州", ISP: "电信", CCode: "CN"},
		{Network: "1.119.178.0/23", CountryName: "中国", RegionName: "浙江", CityName: "杭州", ISP: "电信", CCode: "CN"},
	})
	return city, asn, ip
}

// carrierListsDir is the folder TestChinaOperatorIPFolder loads: the
// fixture, or a clone of china-operator-ip's ip-lists branch (make
// test-carrier-lists).
var carrierListsDir = flag.String("carrier-lists", "", "a china-operator-ip folder to load instead of test/testdata/china-operator-ip")

// TestChinaOperatorIPFolder: carrier_lists pointed at a folder laid out
// as china-operator-ip's ip-lists branch (real lines, with networks that
// several carriers list) loads and counts those networks; there the
// databases decide, elsewhere the list does.
func TestChinaOperatorIPFolder(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn, ip := operatorDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", listNodes)
	lists := *carrierListsDir
	if lists == "" {
		lists = repoFile(t, "test/testdata/china-operator-ip")
	}
	set, err := carrierlist.Load([]string{lists}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Lists()) != 14 || set.Shared() == 0 {
		t.Errorf("Expected NAME.txt and NAME6.txt of 7 carriers and networks several list, got %d lists, %d shared", len(set.Lists()), set.Shared())
	}
	s := startServer(t, corefile(city, asn, nodes, "ipdb "+ip+"\ncarrier_lists "+lists))
	logs.line(t, fmt.Sprintf("carrier_lists: 14 lists, %d ranges, %d networks in several carriers' lists (the databases decide there)", set.Ranges(), set.Shared()))
	tests := []struct{ ecs, isp, source string }{
		{"1.119.178.0/24", "telecom", "ipdb"}, // cmcc.txt and unicom.txt
		{"1.51.0.0/24", "edu", "list:cernet"},
		{"1.1.8.0/24", "unicom", "list:unicom"},
	}
	for _, tc := range tests {
		_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, tc.ecs))
		checkLabels(t, l, map[string]string{"isp": tc.isp, "geo_source": tc.source})
	}
}

// TestCarrierListsPriority: with carrier_lists_priority agreeing_databases,
// MaxMind's ASN and the IPIP.net database agreeing on telecom outvote
// cernet.txt's edu; a list alone against one database still wins, and
// by default the list wins over both.
func TestCarrierListsPriority(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn, ip := operatorDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", listNodes)
	lists := repoFile(t, "test/testdata/china-operator-ip")
	for _, tc := range []struct {
		priority, isp, source string
	}{
		{"", "edu", "list:cernet"},
		{"carrier_lists_priority list", "edu", "list:cernet"},
		{"carrier_lists_priority agreeing_databases", "telecom", "ipdb"},
	} {
		s := startServer(t, corefile(city, asn, nodes, "ipdb "+ip+"\ncarrier_lists "+lists+"\n"+tc.priority))
		_, l := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, "1.51.0.0/24"))
		checkLabels(t, l, map[string]string{"isp": tc.isp, "geo_source": tc.source})
		// Without the ASN database only one database says telecom: the list wins.
		alone := startServer(t, corefile(city, "", nodes, "ipdb "+ip+"\ncarrier_lists "+lists+"\n"+tc.priority))
		_, l = queryLabels(t, alone, logs, newQuery(t, "www.example.org", dns.TypeA, "1.51.0.0/24"))
		checkLabels(t, l, map[string]string{"isp": "edu", "geo_source": "list:cernet"})
	}
}
