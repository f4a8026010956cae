package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestRangePrefixes(t *testing.T) {
	for _, tc := range []struct {
		start, end string
		want       []string
	}{
		{"1.0.0.0", "1.0.0.255", []string{"1.0.0.0/24"}},
		{"1.0.4.0", "1.0.7.255", []string{"1.0.4.0/22"}},
		{"1.0.128.0", "1.0.196.255", []string{"1.0.128.0/18", "1.0.192.0/22", "1.0.196.0/24"}},
		{"10.0.0.1", "10.0.0.6", []string{"10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/31", "10.0.0.6/32"}},
		{"0.0.0.0", "255.255.255.255", []string{"0.0.0.0/0"}},
		{"2001:200::", "2001:200:ffff:ffff:ffff:ffff:ffff:ffff", []string{"2001:200::/32"}},
		{"2001:db8::", "2001:db8::2", []string{"2001:db8::/127", "2001:db8::2/128"}},
	} {
		var got []string
		for _, p := range rangePrefixes(netip.MustParseAddr(tc.start), netip.MustParseAddr(tc.end)) {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("rangePrefixes(%s, %s) = %v, want %v", tc.start, tc.end, got, tc.want)
		}
	}
}

func TestInsertable(t *testing.T) {
	for p, want := range map[string]bool{
		"1.0.0.0/24":         true,
		"10.1.0.0/16":        false,
		"192.0.2.0/24":       false,
		"8.0.0.0/7":          true,
		"2400:cb00::/32":     true,
		"2002:c000::/24":     false,
		"2001::/32":          false,
		"fe80::/64":          false,
		"::ffff:1.2.3.0/120": false,
	} {
		if got := insertable(netip.MustParsePrefix(p)); got != want {
			t.Errorf("insertable(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestPackQuery(t *testing.T) {
	b, err := packQuery(7, "www.example.org", dns.TypeA, netip.MustParsePrefix("202.101.172.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		t.Fatal(err)
	}
	if m.RecursionDesired || m.Question[0].Name != "www.example.org." || m.Question[0].Qtype != dns.TypeA {
		t.Errorf("unexpected query %v", m)
	}
	o := m.IsEdns0()
	if o == nil || o.UDPSize() != 1232 || len(o.Option) != 1 {
		t.Fatalf("want EDNS0 1232 with one option, got %v", o)
	}
	e, ok := o.Option[0].(*dns.EDNS0_SUBNET)
	if !ok || e.Family != 1 || e.SourceNetmask != 24 || e.Address.String() != "202.101.172.0" {
		t.Errorf("unexpected ECS %v", o.Option[0])
	}
}

// TestLateClusters: slow answers close together in the order they came
// form one cluster, counted and timed by their places.
func TestLateClusters(t *testing.T) {
	lat := make([]float64, 1000)
	for i := range lat {
		lat[i] = 0.0001
	}
	for _, i := range []int{10, 50, 140, 600} { // 10..140 within the gap; 600 alone
		lat[i] = 0.002
	}
	lat[50] = 0.005
	got := lateClusters(lat, 0.001, 100)
	want := []cluster{{first: 10, last: 140, slow: 3, worst: 0.005}, {first: 600, last: 600, slow: 1, worst: 0.002}}
	if !slices.Equal(got, want) {
		t.Fatalf("lateClusters = %+v, want %+v", got, want)
	}
	var b strings.Builder
	printClusters(&b, got, 1, 1000, 1)
	if w := "4 answers over 1 ms in 2 clusters\n  at   0.010 s:     3 slow over  130.0 ms, the slowest 5.00 ms\n"; b.String() != w {
		t.Fatalf("printClusters:\n%q\nwant\n%q", b.String(), w)
	}
}
