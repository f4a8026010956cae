package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2region"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "nets.csv")
	out4, out6 := filepath.Join(dir, "v4.xdb"), filepath.Join(dir, "v6.xdb")
	csv := "network,country,province,city,isp,iso2\n" +
		"202.101.172.0/24,中国,浙江省,杭州市,电信,CN\n" +
		"202.106.0.0/16,中国,北京市,北京市,联通,CN\n" +
		"2409:8000::/20,中国,,,移动,CN\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out4, out6, 1735689600); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, tc := range []struct {
		file, addr, province, isp string
		bits                      int
	}{
		{out4, "202.101.172.9", "浙江省", "电信", 24},
		{out4, "202.106.3.4", "北京市", "联通", 16},
		{out6, "2409:8000::1", "", "移动", 20},
	} {
		r, err := ip2region.Open(tc.file)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		rec, bits, ok := r.Lookup(netip.MustParseAddr(tc.addr))
		if !ok || rec.Province != tc.province || rec.ISP != tc.isp || bits != tc.bits {
			t.Errorf("Lookup(%s) = %+v /%d %v, want %q %q /%d", tc.addr, rec, bits, ok, tc.province, tc.isp, tc.bits)
		}
		if r.Created() != 1735689600 {
			t.Errorf("Created = %d", r.Created())
		}
	}
	v4only := filepath.Join(dir, "v4only.csv")
	if err := os.WriteFile(v4only, []byte("network,country,province,city,isp,iso2\n1.0.1.0/24,中国,浙江省,,,CN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(v4only, "", out6, 1); err == nil || !strings.Contains(err.Error(), "no IPv6 rows") {
		t.Errorf("IPv6 out without IPv6 rows: err %v", err)
	}
}
