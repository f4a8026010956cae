package overrides

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
)

func known(id string) bool { return id == "gz-telecom" || id == "hz-telecom" }

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [gz-telecom]\n    colour: red\n", `line 4: overrides[0]: unknown key "colour"`},
		{"no cidr", "overrides:\n  - nodes: [gz-telecom]\n", "line 2: overrides[0]: field cidr: missing"},
		{"bad cidr", "overrides:\n  - cidr: 203.0.113.0/33\n    nodes: [gz-telecom]\n", "field cidr: \"203.0.113.0/33\" is not a network"},
		{"host bits", "overrides:\n  - cidr: 203.0.113.5/24\n    nodes: [gz-telecom]\n", "has bits set after the prefix (the network is 203.0.113.0/24)"},
		{"nothing to do", "overrides:\n  - cidr: 203.0.113.0/24\n    note: hi\n", "field location/nodes"},
		{"unknown node", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [nobody]\n", `line 3: overrides[0]: field nodes: unknown node "nobody"`},
		{"empty nodes", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: []\n", "field nodes: an empty list"},
		{"no country", "overrides:\n  - cidr: 203.0.113.0/24\n    location: {province: ZJ}\n", "field location.country: missing; country is required"},
		{"bad country", "overrides:\n  - cidr: 203.0.113.0/24\n    location: {country: XX}\n", "field location.country"},
		{"bad province", "overrides:\n  - cidr: 203.0.113.0/24\n    location: {country: CN, province: Atlantis}\n", "field location.province"},
		{"lat without lon", "overrides:\n  - cidr: 203.0.113.0/24\n    location: {country: CN, lat: 30}\n", "field location.lat/lon"},
		{"duplicate", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [gz-telecom]\n  - cidrs: [198.51.100.0/24, 203.0.113.0/24]\n    nodes: [hz-telecom]\n",
			"line 4: overrides[1]: field cidr: 203.0.113.0/24 is overridden already, at line 2"},
		{"bad expiry", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [gz-telecom]\n    expires: someday\n", "line 4"},
	}
	for _, tc := range tests {
		_, err := Parse("o.yaml", []byte(tc.yaml), known)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "o.yaml") {
			t.Errorf("%s: got %v, want an error naming o.yaml and containing %q", tc.name, err, tc.want)
		}
	}
	if tb, err := Parse("o.yaml", nil, known); err != nil || tb.Len() != 0 {
		t.Errorf("An empty file: got %v %v, want an empty table", tb, err)
	}
}

const sample = `overrides:
  - cidr: 10.0.0.0/8
    location: {country: CN, province: GD, city: Maoming, isp: telecom}
    note: dial test
  - cidr: 10.1.0.0/16
    nodes: [gz-telecom]
  - cidr: 10.1.2.0/24
    location: {country: CN, province: 湖北, lat: 30.6, lon: 114.3}
  - cidrs: ["2001:db8:1::/48", "::ffff:192.0.2.0/120"]
    nodes: [hz-telecom]
    expires: 2026-12-31T00:00:00Z
`

func TestLookup(t *testing.T) {
	tb, err := Parse("o.yaml", []byte(sample), known)
	if err != nil {
		t.Fatal(err)
	}
	pins := New([]Entry{{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.1.2.128/25")}, Nodes: []string{"hz-telecom"}}})
	tests := []struct {
		addr     string
		tables   []*Table
		province string // "" = no location override
		pin      string // "" = no pin
		minBits  uint8
	}{
		{"10.9.9.9", []*Table{tb}, "GD", "", 13},           // 10.0/13 holds no other entry; 10.8/13 would reach 10.1/16
		{"10.128.0.1", []*Table{tb}, "GD", "", 9},          // far from the /16: the /8 split at /9
		{"10.1.9.9", []*Table{tb}, "GD", "gz-telecom", 21}, // 10.1.8/21 stays clear of 10.1.2/24
		{"10.1.2.3", []*Table{tb}, "HB", "gz-telecom", 24},
		{"10.1.2.200", []*Table{pins, tb}, "HB", "hz-telecom", 25}, // pins first
		{"10.1.2.3", []*Table{pins, tb}, "HB", "gz-telecom", 25},
		{"11.0.0.1", []*Table{tb}, "", "", 8}, // 10/8 and 11/8 part at the 8th bit
		{"192.0.2.7", []*Table{tb}, "", "hz-telecom", 24},
		{"::ffff:192.0.2.7", []*Table{tb}, "", "hz-telecom", 24},
		{"2001:db8:1::1", []*Table{tb}, "", "hz-telecom", 48},
		{"2001:db8:2::1", []*Table{tb}, "", "", 47},
		{"8.8.8.8", []*Table{tb}, "", "", 7},
	}
	for _, tc := range tests {
		m := Lookup(tc.tables, netip.MustParseAddr(tc.addr))
		prov, pin := "", ""
		if m.Location != nil {
			prov = m.Location.Location.Province
		}
		if m.Pin != nil {
			pin = m.Pin.Nodes[0]
		}
		if prov != tc.province || pin != tc.pin {
			t.Errorf("%s: location %q pin %q, want %q %q", tc.addr, prov, pin, tc.province, tc.pin)
		}
		if m.MinBits != tc.minBits {
			t.Errorf("%s: MinBits %d, want %d", tc.addr, m.MinBits, tc.minBits)
		}
	}
}

// A reply's scope of MinBits never covers an address that another entry
// answers: checked against every address of a small space.
func TestMinBitsIsSafe(t *testing.T) {
	tb := New([]Entry{
		{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/22")}, Nodes: []string{"a"}},
		{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.1.0/26")}, Nodes: []string{"b"}},
		{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.2.128/25")}, Nodes: []string{"c"}},
		{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.5.0/24")}, Nodes: []string{"d"}},
	})
	pinOf := func(a netip.Addr) *Entry { return Lookup([]*Table{tb}, a).Pin }
	for i := 0; i < 8*256; i++ {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i / 256), byte(i % 256)})
		m := Lookup([]*Table{tb}, a)
		p, _ := a.Prefix(int(m.MinBits))
		for j := 0; j < 8*256; j++ {
			b := netip.AddrFrom4([4]byte{10, 0, byte(j / 256), byte(j % 256)})
			if p.Contains(b) && pinOf(b) != m.Pin {
				t.Fatalf("Scope %s of %s covers %s, which another entry answers", p, a, b)
			}
		}
	}
}

func TestActive(t *testing.T) {
	tb, err := Parse("o.yaml", []byte(sample), known)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	act, next := tb.Active(before)
	if act.Len() != 4 || !next.Equal(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Before expiry: %d entries, next %v; want 4 and the expiry", act.Len(), next)
	}
	act, next = tb.Active(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if act.Len() != 3 || !next.IsZero() {
		t.Errorf("After expiry: %d entries, next %v; want 3 and none", act.Len(), next)
	}
	if m := Lookup([]*Table{act}, netip.MustParseAddr("192.0.2.7")); m.Pin != nil {
		t.Errorf("An expired pin still matches")
	}
}

func TestLocation(t *testing.T) {
	tb, err := Parse("o.yaml", []byte(sample), known)
	if err != nil {
		t.Fatal(err)
	}
	gd := tb.Entries[0].Location
	if gd.Country != "CN" || gd.Province != "GD" || gd.City != "Maoming" || gd.ISP != "telecom" || !gd.HasCoords || !gd.ProvinceCoords {
		t.Errorf("GD override: %+v, want CN/GD/Maoming telecom at the capital", gd)
	}
	hb := tb.Entries[2].Location
	if hb.Province != "HB" || hb.Lat != 30.6 || hb.ProvinceCoords {
		t.Errorf("HB override: %+v, want its own coordinates", hb)
	}
}

func TestLookupAllocs(t *testing.T) {
	tb, _ := Parse("o.yaml", []byte(sample), known)
	a := netip.MustParseAddr("10.1.2.3")
	ts := []*Table{tb}
	if n := testing.AllocsPerRun(100, func() { Lookup(ts, a) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

// TestParseRejectsAliases: the alias bomb is refused at its line, without
// expanding it.
func TestParseRejectsAliases(t *testing.T) {
	y := "overrides:\n  - cidr: 1.0.1.0/24\n    nodes: [&k bogus]\n" + testsupport.AliasBomb("    ")
	_, err := Parse("o.yaml", []byte(y), known)
	if err == nil || !strings.Contains(err.Error(), "overrides o.yaml: line 4: an alias (*k) is not allowed") {
		t.Fatalf("Expected the alias refused at line 4, got %v", err)
	}
}
