package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdb"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "nets.csv"), filepath.Join(dir, "nets.ipdb")
	csv := "network,country_name,region_name,city_name,isp_domain,country_code\n" +
		"202.101.172.0/24,中国,浙江,杭州,电信,CN\n" +
		"202.106.0.0/16,中国,北京,北京,联通,CN\n" +
		"2409:8000::/20,中国,,,移动,CN\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if err := run(in, out, 1735689600); err != nil {
		t.Fatalf("Run: %v", err)
	}
	r, err := ipdb.Open(out)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if m := r.Meta(); m.Build != 1735689600 || m.IPVersion != ipdb.IPv4|ipdb.IPv6 || len(m.Fields) != 5 {
		t.Errorf("Meta = %+v", m)
	}
	tests := []struct {
		addr, region, isp string
		bits              int
	}{
		{"202.101.172.35", "浙江", "电信", 24},
		{"202.106.0.20", "北京", "联通", 16},
		{"2409:8000::1", "", "移动", 20},
	}
	for _, tc := range tests {
		rec, bits, ok := r.Lookup(netip.MustParseAddr(tc.addr))
		if !ok || bits != tc.bits || rec.RegionName() != tc.region || rec.ISPDomain() != tc.isp || rec.CountryCode() != "CN" {
			t.Errorf("Lookup(%s) = %q, %q, %d, %v; want %q, %q, %d", tc.addr, rec.RegionName(), rec.ISPDomain(), bits, ok, tc.region, tc.isp, tc.bits)
		}
	}
	if err := run(filepath.Join(dir, "missing.csv"), out, 0); err == nil {
		t.Errorf("Expected an error for a missing input")
	}
}
