package decide_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/decide"

	"github.com/miekg/dns"
)

// TestParseClient: an address is the resolver, a prefix an ECS option
// (masked, IPv4-mapped ones in family 2); String gives back the form.
func TestParseClient(t *testing.T) {
	tests := []struct {
		in, want string
		bits     int
		mapped   bool
		addr     string
	}{
		{"1.0.1.7", "1.0.1.7", -1, false, "1.0.1.7"},
		{"::ffff:1.0.1.7", "1.0.1.7", -1, false, "1.0.1.7"},
		{"2400::1", "2400::1", -1, false, "2400::1"},
		{"1.0.1.7/24", "1.0.1.0/24", 24, false, "1.0.1.0"},
		{"2400::1/48", "2400::/48", 48, false, "2400::"},
		{"::ffff:2.0.0.9/120", "::ffff:2.0.0.0/120", 24, true, "2.0.0.0"},
		{"1.0.1.7/0", "0.0.0.0/0", 0, false, "0.0.0.0"},
	}
	for _, tc := range tests {
		c, err := decide.ParseClient(tc.in)
		if err != nil {
			t.Errorf("ParseClient(%q): %v", tc.in, err)
			continue
		}
		if c.String() != tc.want || c.Bits != tc.bits || c.Mapped != tc.mapped || c.Addr != netip.MustParseAddr(tc.addr) {
			t.Errorf("ParseClient(%q) = %+v (%s), want %s bits %d mapped %v", tc.in, c, c, tc.want, tc.bits, tc.mapped)
		}
		if back, err := decide.ParseClient(c.String()); err != nil || back != c {
			t.Errorf("ParseClient(%q).String() = %s does not read back: %+v %v", tc.in, c, back, err)
		}
	}
	for _, bad := range []string{"", "example.org", "1.0.1.7/33", "fe80::1%eth0", "fe80::1%eth0/64", "::ffff:1.0.1.7/64", "1.0.1/24"} {
		if c, err := decide.ParseClient(bad); err == nil {
			t.Errorf("ParseClient(%q) = %+v, want an error", bad, c)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseClient(%q): the error %q does not name the input", bad, err)
		}
	}
}

// TestForClient: For decides a client the way a query from it does: an
// address as the resolver, a prefix as its ECS option, a mapped prefix in
// family 2 with the scope counted in IPv6 bits.
func TestForClient(t *testing.T) {
	c, _ := newControl(t, "trust_ecs 192.0.2.0/24\n")
	ctx := context.Background()
	for _, tc := range []struct {
		client, province string
		fromECS          bool
		minScope         uint8
	}{
		{"1.0.1.7", "ZJ", false, 0},
		{"2.0.0.0/24", "SH", true, 1},
		{"::ffff:2.0.0.0/120", "SH", true, 97},
		{"2400::/48", "BJ", true, 1},
	} {
		cl, err := decide.ParseClient(tc.client)
		if err != nil {
			t.Fatal(err)
		}
		var out decide.Outcome
		// trust_ecs does not cover the client: a tool's client is its own
		// resolver and is believed.
		if err := c.Decider().For(ctx, cl, "www.example.org", dns.TypeA, &out); err != nil {
			t.Fatal(err)
		}
		if out.Loc.Province != tc.province || out.FromECS != tc.fromECS || out.Scope < tc.minScope {
			t.Errorf("For(%s): province %q fromECS %v scope /%d, want %s %v >= /%d", tc.client, out.Loc.Province, out.FromECS, out.Scope, tc.province, tc.fromECS, tc.minScope)
		}
		if cl.Mapped && (out.ECS.Family != 2 || out.Scope > 120) {
			t.Errorf("For(%s): expected family 2 with a scope within /120, got family %d scope /%d", tc.client, out.ECS.Family, out.Scope)
		}
	}
	// With a known resolver outside trust_ecs, its ECS is not believed.
	cl, _ := decide.ParseClient("2.0.0.0/24")
	cl.Remote = netip.MustParseAddr("1.0.1.7")
	var out decide.Outcome
	if err := c.Decider().For(ctx, cl, "", dns.TypeA, &out); err != nil {
		t.Fatal(err)
	}
	if out.FromECS || out.Loc.Province != "ZJ" || out.Record.Name != "www.example.org." {
		t.Errorf("Expected the untrusted resolver's own address for the first record, got fromECS %v province %q record %s", out.FromECS, out.Loc.Province, out.Record.Name)
	}
	if err := c.Decider().For(ctx, cl, "nope.example.org", dns.TypeA, &out); err == nil || !strings.Contains(err.Error(), "www.example.org.") {
		t.Errorf("Expected an unknown name refused with the known ones listed, got %v", err)
	}
}

// TestRecord: "" is the table's first name; names are matched case-blind.
func TestRecord(t *testing.T) {
	c, _ := newControl(t, "")
	v := c.View()
	if r, err := decide.Record(v, ""); err != nil || r.Name != v.Table.Names[0] {
		t.Errorf("Record(\"\") = %v %v, want the first of %v", r, err, v.Table.Names)
	}
	if r, err := decide.Record(v, "SH.Example.ORG"); err != nil || r.Name != "sh.example.org." {
		t.Errorf("Record(SH.Example.ORG) = %v %v", r, err)
	}
	_, err := decide.Record(v, "mail.example.org")
	if err == nil || !strings.Contains(err.Error(), "mail.example.org.") || !strings.Contains(err.Error(), v.Table.Path) {
		t.Errorf("Expected an error naming the name and the table, got %v", err)
	}
}

// TestECSAddr: the option's address only when it matches its family.
func TestECSAddr(t *testing.T) {
	tests := []struct {
		family uint16
		ip     net.IP
		want   string
	}{
		{1, net.IPv4(1, 0, 1, 0).To4(), "1.0.1.0"},
		{1, net.IPv4(1, 0, 1, 0), "1.0.1.0"}, // the 16-byte form of an IPv4 address
		{1, net.ParseIP("2400::1"), ""},
		{2, net.ParseIP("2400::1"), "2400::1"},
		{2, net.IPv4(1, 0, 1, 0).To4(), ""},
		{3, net.IPv4(1, 0, 1, 0).To4(), ""},
	}
	for _, tc := range tests {
		a, ok := decide.ECSAddr(&dns.EDNS0_SUBNET{Family: tc.family, Address: tc.ip})
		if got := ""; ok {
			got = a.String()
			if got != tc.want {
				t.Errorf("ECSAddr(%d, %v) = %s, want %q", tc.family, tc.ip, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("ECSAddr(%d, %v) = none, want %s", tc.family, tc.ip, tc.want)
		}
	}
}

// otherAddr is a net.Addr of neither UDP nor TCP, as a dnstap or a test
// writer has.
type otherAddr string

func (a otherAddr) Network() string { return "other" }
func (a otherAddr) String() string  { return string(a) }

// TestRemoteAddr: UDP, TCP and textual addresses, mapped ones as IPv4.
func TestRemoteAddr(t *testing.T) {
	tests := []struct {
		a    net.Addr
		want netip.Addr
	}{
		{&net.UDPAddr{IP: net.IPv4(1, 0, 1, 7), Port: 53}, netip.MustParseAddr("1.0.1.7")},
		{&net.TCPAddr{IP: net.ParseIP("2400::1"), Port: 53}, netip.MustParseAddr("2400::1")},
		{otherAddr("[::ffff:2.0.0.1]:53"), netip.MustParseAddr("2.0.0.1")},
		{otherAddr("not an address"), netip.Addr{}},
	}
	for _, tc := range tests {
		if got := decide.RemoteAddr(tc.a); got != tc.want {
			t.Errorf("RemoteAddr(%v) = %v, want %v", tc.a, got, tc.want)
		}
	}
	c, _ := newControl(t, "")
	out := decideQ(t, c, "www.example.org", dns.TypeA, otherAddr("2.0.0.1:5353"), nil)
	if out.Client != netip.MustParseAddr("2.0.0.1") || out.Loc.Province != "SH" {
		t.Errorf("Expected a textual resolver address located, got %v %q", out.Client, out.Loc.Province)
	}
}
