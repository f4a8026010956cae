package carrierlist_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/carrierlist"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var lists = map[string]string{
	"chinanet.txt":  "# China Telecom\n202.96.0.0/12\n\n1.80.0.0/13  # trailing comment\n",
	"chinanet6.txt": "240e::/20\n",
	"unicom.txt":    "202.102.128.0/20\n202.96.0.0/12\n", // the same prefix as chinanet: refused below
	"cmcc.txt":      "2409:8000::/20\n36.128.0.0/10\n",
	"crtc.txt":      "202.96.64.0/19\n", // inside chinanet's /12: the longer wins
	"cernet.txt":    "::ffff:202.112.0.0/109\n",
	"drpeng.txt":    "202.96.64.128/25\n", // inside crtc's /19
	"china.txt":     "1.0.0.0/8\n",        // all of China: skipped
	"README.md":     "not a list",
}

func load(t *testing.T, files map[string]string) *carrierlist.Set {
	t.Helper()
	s, err := carrierlist.Load([]string{writeFiles(t, files)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLookup: the longest prefix wins across lists, both families, and a
// miss says how far the lists leave it alone.
func TestLookup(t *testing.T) {
	files := map[string]string{}
	for k, v := range lists {
		files[k] = v
	}
	files["unicom.txt"] = "202.102.128.0/20\n"
	s := load(t, files)
	if got := len(s.Lists()); got != 7 {
		t.Fatalf("%d lists, want 7 (china.txt and README.md skipped): %+v", got, s.Lists())
	}
	tests := []struct {
		addr    string
		carrier string // "" = in no list
		name    string
		bits    int
	}{
		{"202.100.1.1", "telecom", "chinanet", 15}, // clear of unicom's 202.102.128.0/20
		{"202.96.0.1", "telecom", "chinanet", 18},
		{"202.96.64.1", "mobile", "crtc", 25},
		{"202.96.64.200", "drpeng", "drpeng", 25},
		{"202.96.95.255", "mobile", "crtc", 20},
		{"202.102.130.1", "unicom", "unicom", 20},
		{"202.112.5.5", "edu", "cernet", 13},
		{"::ffff:202.112.5.5", "edu", "cernet", 13},
		{"36.190.0.1", "mobile", "cmcc", 10},
		{"1.80.0.1", "telecom", "chinanet", 13},
		{"240e:1::1", "telecom", "chinanet6", 20},
		{"2409:8000::1", "mobile", "cmcc", 20},
		{"1.1.1.1", "", "", 0},
		{"8.8.8.8", "", "", 0},
		{"2001:db8::1", "", "", 0},
	}
	for _, tc := range tests {
		i, bits, ok := s.Lookup(netip.MustParseAddr(tc.addr))
		if ok != (tc.carrier != "") {
			t.Errorf("Lookup(%s) ok = %v", tc.addr, ok)
			continue
		}
		if ok {
			if l := s.List(i); l.Carrier != tc.carrier || l.Name != tc.name {
				t.Errorf("Lookup(%s) = %s (%s), want %s (%s)", tc.addr, l.Name, l.Carrier, tc.name, tc.carrier)
			}
		}
		if tc.bits != 0 && bits != tc.bits {
			t.Errorf("Lookup(%s) bits = %d, want %d", tc.addr, bits, tc.bits)
		}
	}
	// A miss: 1.1.1.1's block must not reach into 1.80.0.0/13.
	if _, bits, _ := s.Lookup(netip.MustParseAddr("1.1.1.1")); bits < 10 || bits > 32 {
		t.Errorf("Lookup(1.1.1.1) bits = %d, want a block clear of 1.80.0.0/13", bits)
	}
}

// TestLookupAgainstScan: for every address around each range's edges, the
// set agrees with the longest matching prefix found by a scan, and the
// block it reports holds that answer throughout.
func TestLookupAgainstScan(t *testing.T) {
	files := map[string]string{
		"a.txt": "10.0.0.0/8\n10.1.0.0/16\n10.1.2.0/24\n0.0.0.0/0\n",
		"b.txt": "10.1.2.128/25\n10.0.0.0/24\n10.255.255.255/32\n",
		"c.txt": "10.1.0.0/17\n::/0\n2001:db8::/32\n",
	}
	dir := writeFiles(t, files)
	s, err := carrierlist.Load([]string{dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		p    netip.Prefix
		name string
	}
	var all []entry
	for name, body := range files {
		ps, err := carrierlist.Parse(name, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			all = append(all, entry{p.Prefix, carrierlist.NameOf(name)})
		}
	}
	scan := func(a netip.Addr) string {
		best, bits := "", -1
		for _, e := range all {
			if e.p.Contains(a) && e.p.Bits() > bits {
				best, bits = e.name, e.p.Bits()
			}
		}
		return best
	}
	var probes []netip.Addr
	for _, e := range all {
		first := e.p.Addr()
		probes = append(probes, first, first.Prev(), first.Next())
		last := first
		for i := e.p.Bits(); i < first.BitLen() && i < e.p.Bits()+12; i++ {
			last = last.Next()
		}
		probes = append(probes, last)
	}
	probes = append(probes, netip.MustParseAddr("10.1.2.127"), netip.MustParseAddr("10.1.2.255"), netip.MustParseAddr("10.1.128.0"))
	for _, a := range probes {
		if !a.IsValid() {
			continue
		}
		want := scan(a)
		i, bits, ok := s.Lookup(a)
		got := ""
		if ok {
			got = s.List(i).Name
		}
		if got != want {
			t.Errorf("Lookup(%s) = %q, scan says %q", a, got, want)
		}
		// Every address of the reported block has the same answer.
		blk := netip.PrefixFrom(a, bits).Masked()
		for _, b := range []netip.Addr{blk.Addr(), lastOf(blk)} {
			if scan(b) != want {
				t.Errorf("Lookup(%s) block %s: %s says %q, not %q", a, blk, b, scan(b), want)
			}
		}
	}
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestCarrierOf(t *testing.T) {
	for name, want := range map[string]string{
		"chinanet": "telecom", "chinanet6": "telecom", "unicom": "unicom", "unicom6": "unicom",
		"cmcc": "mobile", "crtc": "mobile", "cernet6": "edu", "cstnet": "cstnet", "drpeng": "drpeng",
		"googlecn": "googlecn", "hkbn": "hkbn", "CMCC": "mobile", "chinanet46": "telecom", "cmcc46": "mobile",
	} {
		if got := carrierlist.CarrierOf(name); got != want {
			t.Errorf("CarrierOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestErrors: a bad list names the file and the line; nothing is loaded.
func TestErrors(t *testing.T) {
	tests := []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"unicom.txt": "1.2.3.0/24\nbogus\n"}, `unicom.txt:2: "bogus" is not a CIDR`},
		{map[string]string{"unicom.txt": "# c\n1.2.3.4/24\n"}, "unicom.txt:2: 1.2.3.4/24 has host bits set (did you mean 1.2.3.0/24?)"},
		{map[string]string{"unicom.txt": "1.2.3.4\n"}, `unicom.txt:1: "1.2.3.4" is not a CIDR`},
		{map[string]string{"unicom.txt": strings.Repeat("1", 5000) + "\n"}, "unicom.txt:1: line longer"},
		{map[string]string{"README.md": "x"}, "has no carrier list"},
	}
	for _, tc := range tests {
		_, err := carrierlist.Load([]string{writeFiles(t, tc.files)}, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%v) = %v, want %q", tc.files, err, tc.want)
		}
	}
	// A linked list is read; a directory named like a list is not.
	linked := writeFiles(t, map[string]string{"real": "1.0.0.0/8\n"})
	if err := os.Symlink(filepath.Join(linked, "real"), filepath.Join(linked, "unicom.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(linked, "cmcc.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if s, err := carrierlist.Load([]string{linked}, 0); err != nil || len(s.Lists()) != 1 || s.List(0).Carrier != "unicom" {
		t.Errorf("Load of a linked list: %v, %+v", err, s.Lists())
	}
	dir := writeFiles(t, map[string]string{"china.txt": "1.0.0.0/8\n", "unicom.txt": "1.0.0.0/8\n"})
	if _, err := carrierlist.Load([]string{filepath.Join(dir, "china.txt")}, 0); err == nil || !strings.Contains(err.Error(), "not a carrier") {
		t.Errorf("Load(china.txt) = %v", err)
	}
	if _, err := carrierlist.Load([]string{filepath.Join(dir, "unicom.txt")}, 5); err == nil || !strings.Contains(err.Error(), "over the size limit") {
		t.Errorf("Load over the size limit = %v", err)
	}
	if _, err := carrierlist.Load([]string{filepath.Join(dir, "missing.txt")}, 0); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// TestDigest: the digest follows the content.
func TestDigest(t *testing.T) {
	a := load(t, map[string]string{"unicom.txt": "1.0.0.0/24\n"})
	b := load(t, map[string]string{"unicom.txt": "# same\n1.0.0.0/24\n"})
	c := load(t, map[string]string{"chinanet.txt": "1.0.0.0/24\n"})
	if a.Digest() != b.Digest() || a.Digest() == c.Digest() {
		t.Errorf("digests %x %x %x", a.Digest(), b.Digest(), c.Digest())
	}
}

func TestLookupAllocs(t *testing.T) {
	files := map[string]string{}
	for k, v := range lists {
		files[k] = v
	}
	files["unicom.txt"] = "202.102.128.0/20\n"
	s := load(t, files)
	a4, a6 := netip.MustParseAddr("202.96.64.1"), netip.MustParseAddr("240e:1::1")
	if n := testing.AllocsPerRun(100, func() { s.Lookup(a4); s.Lookup(a6) }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

// TestShared: a prefix in the lists of several carriers has no list
// answer, longer prefixes inside it still do, and the same prefix in one
// carrier's two lists is one carrier's.
func TestShared(t *testing.T) {
	s := load(t, map[string]string{
		"cmcc.txt":      "1.119.178.0/23\n36.128.0.0/10\n",
		"unicom.txt":    "1.119.178.0/23\n1.119.179.0/24\n",
		"chinanet.txt":  "1.119.178.0/23\n1.80.0.0/13\n",
		"chinanet6.txt": "240e::/20\n2001:c68::/32\n",
		"crtc.txt":      "36.128.0.0/10\n", // China Mobile's too: one carrier
		"unicom6.txt":   "2001:c68::/32\n",
	})
	if got := s.Shared(); got != 2 {
		t.Errorf("Shared() = %d, want 2 (1.119.178.0/23, 2001:c68::/32)", got)
	}
	tests := []struct {
		addr, name string // "" = no list answer
		bits       int
	}{
		{"1.119.178.1", "", 24},
		{"1.119.179.1", "unicom", 24},
		{"2001:c68::1", "", 32},
		{"240e::1", "chinanet6", 20},
		{"36.128.0.1", "cmcc", 10},
		{"1.80.0.1", "chinanet", 13},
	}
	for _, tc := range tests {
		i, bits, ok := s.Lookup(netip.MustParseAddr(tc.addr))
		got := ""
		if ok {
			got = s.List(i).Name
		}
		if got != tc.name || bits != tc.bits {
			t.Errorf("Lookup(%s) = %q /%d, want %q /%d", tc.addr, got, bits, tc.name, tc.bits)
		}
	}
}

// TestChinaOperatorIPLayout: the project's fixture, real lines in the
// layout of china-operator-ip's ip-lists branch, loads: NAME.txt and
// NAME6.txt are read, NAME46.txt (their union) and china*.txt (all of
// China) are skipped, stat, index.html and LICENSE are not lists.
func TestChinaOperatorIPLayout(t *testing.T) {
	dir := filepath.Join("..", "..", "test", "testdata", "china-operator-ip")
	s, err := carrierlist.Load([]string{dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range s.Lists() {
		names = append(names, l.Name)
	}
	want := "cernet cernet6 chinanet chinanet6 cmcc cmcc6 cstnet cstnet6 drpeng drpeng6 googlecn googlecn6 unicom unicom6"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Lists %s, want %s", got, want)
	}
	if got := s.Shared(); got != 16 {
		t.Errorf("Shared() = %d, want 16 (12 IPv4, 4 IPv6)", got)
	}
	if _, _, ok := s.Lookup(netip.MustParseAddr("1.119.178.10")); ok {
		t.Errorf("1.119.178.0/23, in cmcc.txt and unicom.txt, has a list answer")
	}
	// A NAME46 list named alone is read, as its carrier's.
	one, err := carrierlist.Load([]string{filepath.Join(dir, "unicom46.txt")}, 0)
	if err != nil || one.List(0).Carrier != "unicom" {
		t.Errorf("Load(unicom46.txt) = %v, %+v", err, one.Lists())
	}
	for _, name := range []string{"china6.txt", "china46.txt"} {
		if _, err := carrierlist.Load([]string{filepath.Join(dir, name)}, 0); err == nil || !strings.Contains(err.Error(), "not a carrier") {
			t.Errorf("Load(%s) = %v, want not a carrier", name, err)
		}
	}
	// Without NAME.txt and NAME6.txt beside it, NAME46.txt is the list.
	alone := writeFiles(t, map[string]string{"cmcc46.txt": "36.128.0.0/10\n2409:8000::/20\n"})
	if s, err := carrierlist.Load([]string{alone}, 0); err != nil || len(s.Lists()) != 1 || s.List(0).Carrier != "mobile" {
		t.Errorf("Load of a lone cmcc46.txt: %v, %+v", err, s.Lists())
	}
}
