package ipdbgen

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/ipdb"
)

var testMeta = Meta{Build: 1735689600, Languages: []string{"CN", "EN"}, Fields: []string{"country_name", "region_name", "city_name", "isp_domain"}}

func rec(network string, cn, en []string) Rec {
	return Rec{Network: netip.MustParsePrefix(network), Values: map[string][]string{"CN": cn, "EN": en}}
}

var testRecs = []Rec{
	rec("202.101.172.0/24", []string{"中国", "浙江", "杭州", "电信"}, []string{"China", "Zhejiang", "Hangzhou", "ChinaTelecom"}),
	rec("202.101.0.0/16", []string{"中国", "浙江", "", "电信"}, []string{"China", "Zhejiang", "", "ChinaTelecom"}),
	rec("202.101.172.35/32", []string{"中国", "浙江", "杭州", "电信DNS"}, []string{"China", "Zhejiang", "Hangzhou", "ChinaTelecom DNS"}),
	rec("2001:da8:8000::/48", []string{"中国", "北京", "北京", "教育网"}, []string{"China", "Beijing", "Beijing", "CERNET"}),
	rec("2001:da8::/32", []string{"中国", "", "", "教育网"}, []string{"China", "", "", "CERNET"}),
}

func TestBuildReadBack(t *testing.T) {
	b, err := Build(testMeta, testRecs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	r, err := ipdb.FromBytes("test.ipdb", b)
	if err != nil {
		t.Fatalf("FromBytes: %v", err)
	}
	m := r.Meta()
	if m.Build != testMeta.Build || m.IPVersion != 3 || m.Languages["CN"] != 0 || m.Languages["EN"] != 4 || len(m.Fields) != 4 {
		t.Errorf("Meta = %+v", m)
	}
	en, err := r.WithLanguage("EN")
	if err != nil {
		t.Fatalf("WithLanguage: %v", err)
	}
	tests := []struct {
		addr     string
		r        *ipdb.Reader
		city     string
		isp      string
		bits     int
		notFound bool
	}{
		{"202.101.172.35", r, "杭州", "电信DNS", 32, false},
		{"202.101.172.36", r, "杭州", "电信", 30, false},
		{"202.101.172.36", en, "Hangzhou", "ChinaTelecom", 30, false},
		{"202.101.3.4", r, "", "电信", 17, false},
		{"202.102.0.1", r, "", "", 0, true},
		{"2001:da8:8000:1::1", en, "Beijing", "CERNET", 48, false},
		{"2001:da8:1::", r, "", "教育网", 33, false},
		{"2001:db8::1", r, "", "", 0, true},
	}
	for _, tc := range tests {
		got, bits, ok := tc.r.Lookup(netip.MustParseAddr(tc.addr))
		if ok == tc.notFound || bits != tc.bits || got.CityName() != tc.city || got.ISPDomain() != tc.isp {
			t.Errorf("Lookup(%s, %s) = %q, %q, %d, %v; want %q, %q, %d, %v", tc.addr, tc.r.Language(), got.CityName(), got.ISPDomain(), bits, ok, tc.city, tc.isp, tc.bits, !tc.notFound)
		}
	}
}

// Input order does not matter, and identical records are stored once.
func TestBuildDeterministic(t *testing.T) {
	want, err := Build(testMeta, testRecs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		recs := append([]Rec(nil), testRecs...)
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		got, err := Build(testMeta, recs)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Build of shuffled input differs")
		}
	}
	if n := bytes.Count(want, []byte("CERNET")); n != 2 {
		t.Errorf("CERNET stored %d times, want 2", n)
	}
	same := []Rec{rec("10.0.0.0/8", []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"}), rec("11.0.0.0/8", []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"})}
	b, err := Build(testMeta, same)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if n := bytes.Count(b, []byte("a\tb\tc\td\ta\tb\tc\td")); n != 1 {
		t.Errorf("Identical record stored %d times, want 1", n)
	}
}

func TestBuildErrors(t *testing.T) {
	good := rec("10.0.0.0/8", []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"})
	with := func(network string, values map[string][]string) []Rec {
		r := good
		if network != "" {
			r.Network = netip.MustParsePrefix(network)
		}
		if values != nil {
			r.Values = values
		}
		return []Rec{r}
	}
	tests := []struct {
		name string
		meta Meta
		recs []Rec
		want string
	}{
		{"No languages", Meta{Fields: testMeta.Fields}, []Rec{good}, "at least one language"},
		{"No fields", Meta{Languages: []string{"CN"}}, []Rec{good}, "one field"},
		{"Repeated field", Meta{Languages: []string{"CN"}, Fields: []string{"a", "a"}}, []Rec{good}, `repeated name "a"`},
		{"Unnamed language", Meta{Languages: []string{"CN", ""}, Fields: []string{"a"}}, []Rec{good}, `empty or repeated name ""`},
		{"No networks", testMeta, nil, "no networks"},
		{"Invalid network", testMeta, []Rec{{Values: good.Values}}, "record 1: invalid network"},
		{"IPv4-mapped", testMeta, with("::ffff:10.0.0.0/104", nil), "use plain IPv4"},
		{"IPv6 default", testMeta, with("::/0", nil), "::/0 cannot be stored"},
		{"Duplicate", testMeta, append(with("", nil), with("10.1.2.3/8", nil)...), "10.0.0.0/8 is listed twice"},
		{"Missing language", testMeta, with("", map[string][]string{"CN": {"a", "b", "c", "d"}}), `language "EN" needs 4 values, has 0`},
		{"Too few values", testMeta, with("", map[string][]string{"CN": {"a"}, "EN": {"a", "b", "c", "d"}}), `language "CN" needs 4 values, has 1`},
		{"Extra language", testMeta, with("", map[string][]string{"CN": {"a", "b", "c", "d"}, "EN": {"a", "b", "c", "d"}, "FR": {}}), "values for a language not in"},
		{"Tab", testMeta, with("", map[string][]string{"CN": {"a", "b\tc", "c", "d"}, "EN": {"a", "b", "c", "d"}}), "region_name value \"b\\tc\" contains a tab"},
		{"Record too long", testMeta, with("", map[string][]string{"CN": {strings.Repeat("x", 70000), "", "", ""}, "EN": {"", "", "", ""}}), "record is 70007 bytes"},
	}
	for _, tc := range tests {
		_, err := Build(tc.meta, tc.recs)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ipdbgen: ") {
			t.Errorf("%s: error %v, want \"ipdbgen: ...%s...\"", tc.name, err, tc.want)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.ipdb")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if err := Write(path, testMeta, testRecs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	want, _ := Build(testMeta, testRecs)
	if !bytes.Equal(got, want) {
		t.Errorf("Written file differs from Build")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("Stat = %v, %v; want mode 0644", fi, err)
	}
	if err := Write(path, testMeta, nil); err == nil {
		t.Errorf("Write with no networks succeeded")
	}
	if err := Write(filepath.Join(dir, "missing", "out.ipdb"), testMeta, testRecs); err == nil {
		t.Errorf("Write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("Directory holds %d entries, want only out.ipdb (no temporary files)", len(entries))
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("A failed Write changed the existing file")
	}
}
