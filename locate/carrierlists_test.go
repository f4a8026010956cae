package locate

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/ip2regiongen"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/overrides"
)

func writeList(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCarrierListWins: an address in a list takes the list's carrier over
// the databases' (here MaxMind's ASN says telecom), keeps the databases'
// province, and says which list placed it; the lists' blocks bound the
// scope, in a list or not.
func TestCarrierListWins(t *testing.T) {
	dir := t.TempDir()
	writeList(t, dir, "unicom.txt", "# test\n1.0.2.0/24\n")
	writeList(t, dir, "cmcc.txt", "36.0.0.0/17\n")
	writeList(t, dir, "china.txt", "1.0.0.0/8\n") // skipped: not a carrier
	l := newLocator(t, Config{DB: testDB(t), CarrierLists: &CarrierListConfig{Paths: []string{dir}}})
	ctx := context.Background()
	before := snapshot()
	tests := []struct {
		addr, province, isp, source string
		scope                       uint8
	}{
		{"1.0.2.200", "BJ", "unicom", "list:unicom", 24},
		{"1.0.1.9", "ZJ", "telecom", "db", 24},
		{"36.0.5.5", "", "mobile", "list:cmcc", 17}, // MaxMind's /16, the list's /17
		{"36.0.200.5", "", "telecom", "db", 17},
	}
	for _, tc := range tests {
		r := l.Locate(ctx, netip.MustParseAddr(tc.addr))
		if r.Province != tc.province || r.ISP != tc.isp || r.Source.String() != tc.source || r.Scope != tc.scope {
			t.Errorf("Locate(%s) = province %q isp %q source %s scope %d, want %q %q %s %d",
				tc.addr, r.Province, r.ISP, r.Source, r.Scope, tc.province, tc.isp, tc.source, tc.scope)
		}
	}
	if d := before.delta(); d["carrier_list/hit"] != 2 || d["carrier_list/miss"] != 2 {
		t.Errorf("carrier_list lookups %v, want 2 hits and 2 misses", d)
	}
	// From the cache, the list's carrier stays.
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.2.201")); r.ISP != "unicom" || r.Source != geo.SourceCache {
		t.Errorf("cached: isp %q source %s, want unicom from lru", r.ISP, r.Source)
	}
	files := l.Files()
	for _, want := range []string{dir, filepath.Join(dir, "unicom.txt"), filepath.Join(dir, "cmcc.txt")} {
		if !slices.Contains(files, want) {
			t.Errorf("Files() = %v, want %s in it", files, want)
		}
	}
	// Trace names the list and ends on its carrier.
	r, steps := l.Trace(ctx, netip.MustParseAddr("1.0.2.200"))
	if r.ISP != "unicom" || len(steps) == 0 || steps[0].Source != "list:unicom" || steps[0].Location.ISP != "unicom" {
		t.Errorf("Trace = %+v, steps %+v", r.Location, steps)
	}
}

// TestCarrierListReopen: a changed list applies at once (cache entries of
// the old lists are not read); a bad one is refused with its file and
// line, and the previous lists keep serving.
func TestCarrierListReopen(t *testing.T) {
	dir := t.TempDir()
	list := writeList(t, dir, "unicom.txt", "1.0.1.0/24\n")
	l := newLocator(t, Config{DB: testDB(t), CarrierLists: &CarrierListConfig{Paths: []string{list}}})
	ctx, addr := context.Background(), netip.MustParseAddr("1.0.1.9")
	if r := l.Locate(ctx, addr); r.ISP != "unicom" {
		t.Fatalf("before: %q, want unicom", r.ISP)
	}
	if err := os.Rename(list, filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	writeList(t, dir, "unicom.txt", "2.0.0.0/8\n")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	if r := l.Locate(ctx, addr); r.ISP != "telecom" {
		t.Errorf("after the address left the list: %q, want the database's telecom", r.ISP)
	}
	kept := l.CarrierLists()
	writeList(t, dir, "unicom.txt", "2.0.0.0/8\n1.0.1.7/24\n")
	err := l.Reopen()
	if err == nil || !strings.Contains(err.Error(), list+":2:") {
		t.Errorf("Reopen of a bad list: %v, want an error naming %s:2", err, list)
	}
	if l.CarrierLists() != kept {
		t.Error("a bad list replaced the good one")
	}
	if r := l.Locate(ctx, netip.MustParseAddr("2.1.1.1")); r.ISP != "unicom" {
		t.Errorf("after a failed reload: %q, want unicom", r.ISP)
	}
}

// TestCarrierListConfig: a bad list fails New, naming the option.
func TestCarrierListConfig(t *testing.T) {
	dir := t.TempDir()
	bad := writeList(t, dir, "unicom.txt", "bogus\n")
	for _, cfg := range []*CarrierListConfig{{Paths: []string{bad}}, {}, {Paths: []string{filepath.Join(dir, "missing")}}} {
		_, err := New(Config{CarrierLists: cfg})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Layer != "carrier_lists" {
			t.Errorf("New(%+v) = %v, want a carrier_lists ConfigError", cfg, err)
		}
	}
}

// TestIP2RegionSource: ip2region files are read and reopened with the
// other databases, and traced on their own.
func TestIP2RegionSource(t *testing.T) {
	dir := t.TempDir()
	xdb := filepath.Join(dir, "v4.xdb")
	write := func(region string) {
		rec := ip2regiongen.PrefixRec(netip.MustParsePrefix("1.0.9.0/24"), region)
		if err := ip2regiongen.Write(xdb, ip2regiongen.Meta{IPVersion: 4}, []ip2regiongen.Rec{rec}); err != nil {
			t.Fatal(err)
		}
	}
	write("中国|广东省|深圳市|联通|CN")
	files := geo.Files{"ip2region": {xdb}}
	db, err := geo.OpenFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	l := newLocator(t, Config{DB: db, DBFiles: files})
	ctx, addr := context.Background(), netip.MustParseAddr("1.0.9.9")
	if r := l.Locate(ctx, addr); r.Province != "GD" || r.ISP != "unicom" || r.Source != geo.SourceIP2Region {
		t.Errorf("Locate = %+v, want GD unicom from ip2region", r.Location)
	}
	if !slices.Equal(l.Files(), []string{xdb}) {
		t.Errorf("Files() = %v", l.Files())
	}
	write("中国|湖北省|武汉市|电信|CN")
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	r, steps := l.Trace(ctx, addr)
	if r.Province != "HB" || r.ISP != "telecom" {
		t.Errorf("after Reopen: %+v, want HB telecom", r.Location)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Source)
		if s.Source == "ip2region" && !s.Final {
			t.Errorf("the ip2region step is not marked final: %+v", s)
		}
	}
	if !slices.Contains(names, "ip2region") {
		t.Errorf("steps %v lack ip2region", names)
	}
}

// TestCarrierListUnderOverrides: the operator's overrides win over the
// lists; the lists still win over the databases elsewhere.
func TestCarrierListUnderOverrides(t *testing.T) {
	dir := t.TempDir()
	writeList(t, dir, "unicom.txt", "1.0.1.0/24\n1.0.2.0/24\n")
	l := newLocator(t, Config{DB: testDB(t), CarrierLists: &CarrierListConfig{Paths: []string{dir}}})
	ov, err := overrides.Parse("overrides.yaml", []byte("overrides:\n  - {cidr: 1.0.1.0/24, location: {country: CN, province: ZJ, isp: mobile}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.SetOverrides(ov)
	ctx := context.Background()
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.1.9")); r.ISP != "mobile" || r.Source != geo.SourceOverride {
		t.Errorf("overridden: isp %q source %s, want mobile from override", r.ISP, r.Source)
	}
	if r := l.Locate(ctx, netip.MustParseAddr("1.0.2.9")); r.ISP != "unicom" || r.Province != "BJ" {
		t.Errorf("not overridden: %+v, want BJ unicom", r.Location)
	}
}

// TestCarrierListOverOnline: the list's carrier also wins over what the
// online API found in the background.
func TestCarrierListOverOnline(t *testing.T) {
	dir := t.TempDir()
	writeList(t, dir, "cmcc.txt", "36.0.5.0/24\n")
	api := testsupport.NewGeoAPI(t, testsupport.Hangzhou)
	l := newLocator(t, Config{DB: testDB(t), Online: &OnlineConfig{URL: api.URL()},
		CarrierLists: &CarrierListConfig{Paths: []string{dir}}})
	ctx := context.Background()
	if r := l.Locate(ctx, netip.MustParseAddr("36.0.5.1")); r.Province != "" || r.ISP != "mobile" {
		t.Errorf("now: %+v, want country level on mobile", r.Location)
	}
	l.idle(t)
	if r := l.Locate(ctx, netip.MustParseAddr("36.0.5.2")); r.Province != "ZJ" || r.ISP != "mobile" {
		t.Errorf("after the online answer: %+v, want ZJ on mobile", r.Location)
	}
}

// TestCarrierListNarrowerThanKey: a list's block narrower than the cache's
// /24 is not cached for the whole /24: its neighbour outside the list
// keeps the databases' carrier.
func TestCarrierListNarrowerThanKey(t *testing.T) {
	dir := t.TempDir()
	writeList(t, dir, "unicom.txt", "1.0.1.0/25\n")
	l := newLocator(t, Config{DB: testDB(t), CarrierLists: &CarrierListConfig{Paths: []string{dir}}})
	ctx := context.Background()
	for _, tc := range []struct{ addr, isp, source string }{
		{"1.0.1.9", "unicom", "list:unicom"},
		{"1.0.1.200", "telecom", "db"},
		{"1.0.1.10", "unicom", "list:unicom"},
	} {
		if r := l.Locate(ctx, netip.MustParseAddr(tc.addr)); r.ISP != tc.isp || r.Source.String() != tc.source || r.Scope != 25 {
			t.Errorf("Locate(%s) = isp %q source %s scope %d, want %q %s 25", tc.addr, r.ISP, r.Source, r.Scope, tc.isp, tc.source)
		}
	}
}
