package geo

import (
	"net/netip"
	"testing"
)

func TestSpecial(t *testing.T) {
	tests := []struct {
		addr string
		bits int
		ok   bool
	}{
		{"0.1.2.3", 8, true},
		{"10.20.30.40", 8, true},
		{"100.64.0.1", 10, true},
		{"100.127.255.255", 10, true},
		{"100.128.0.1", 0, false},
		{"127.0.0.1", 8, true},
		{"169.254.1.1", 16, true},
		{"172.16.0.1", 12, true},
		{"172.31.255.255", 12, true},
		{"172.32.0.1", 0, false},
		{"192.0.0.8", 24, true},
		{"192.0.2.1", 24, true},
		{"192.88.99.1", 24, true},
		{"192.168.1.1", 16, true},
		{"198.18.0.1", 15, true},
		{"198.19.255.1", 15, true},
		{"198.51.100.7", 24, true},
		{"203.0.113.9", 24, true},
		{"224.0.0.1", 4, true},
		{"239.255.255.250", 4, true},
		{"240.0.0.1", 4, true},
		{"255.255.255.255", 4, true},
		{"8.8.8.8", 0, false},
		{"202.101.172.35", 0, false},
		{"::", 128, true},
		{"::1", 128, true},
		{"fc00::1", 7, true},
		{"fd12:3456::1", 7, true},
		{"fe80::1", 10, true},
		{"2001:db8::53", 32, true},
		{"ff02::1", 8, true},
		{"100::1", 64, true},
		{"2001::1", 23, true},
		{"2001:1ff::1", 23, true},
		{"3fff::1", 20, true},
		{"3fff:fff::1", 20, true},
		{"2001:da8::1", 0, false},
		{"2001:200::1", 0, false},
		{"240e::1", 0, false},
		{"2001:4860:4860::8888", 0, false},
		{"::ffff:10.0.0.1", 8, true},
		{"::ffff:192.168.0.1", 16, true},
		{"::ffff:8.8.8.8", 0, false},
	}
	for _, tc := range tests {
		bits, ok := Special(netip.MustParseAddr(tc.addr))
		if bits != tc.bits || ok != tc.ok {
			t.Errorf("Special(%s) = %d, %v; want %d, %v", tc.addr, bits, ok, tc.bits, tc.ok)
		}
	}
	if _, ok := Special(netip.Addr{}); !ok {
		t.Errorf("Expected the invalid address to be special")
	}
}

func BenchmarkSpecial(b *testing.B) {
	addrs := []netip.Addr{
		netip.MustParseAddr("202.101.172.35"),
		netip.MustParseAddr("192.168.1.1"),
		netip.MustParseAddr("240e:1::1"),
		netip.MustParseAddr("::ffff:8.8.8.8"),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Special(addrs[i&3])
	}
}
