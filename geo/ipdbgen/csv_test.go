package ipdbgen

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeCSV(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nets.csv")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	return path
}

func TestReadCSV(t *testing.T) {
	path := writeCSV(t, `# comment
network, country_name, region_name, city_name, isp_domain, country_code
202.101.172.0/24, 中国, 浙江, 杭州, 电信, CN
# another comment
2001:da8::/32,中国,,,"教育网, CERNET",CN
`)
	m, recs, err := ReadCSV(path)
	if err != nil {
		t.Fatalf("ReadCSV: %v", err)
	}
	if strings.Join(m.Languages, ",") != "CN" || strings.Join(m.Fields, ",") != "country_name,region_name,city_name,isp_domain,country_code" || m.Build != 0 {
		t.Errorf("Meta = %+v", m)
	}
	want := []struct{ network, values string }{
		{"202.101.172.0/24", "中国|浙江|杭州|电信|CN"},
		{"2001:da8::/32", "中国|||教育网, CERNET|CN"},
	}
	if len(recs) != len(want) {
		t.Fatalf("Got %d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		if recs[i].Network != netip.MustParsePrefix(w.network) || strings.Join(recs[i].Values["CN"], "|") != w.values {
			t.Errorf("Record %d = %v %q, want %s %s", i, recs[i].Network, recs[i].Values, w.network, w.values)
		}
	}
	if _, err := Build(m, recs); err != nil {
		t.Errorf("Build: %v", err)
	}
}

func TestReadCSVErrors(t *testing.T) {
	const header = "network,country_name,isp_domain\n"
	tests := []struct {
		name, body, want string
	}{
		{"Empty", "", ": no header line"},
		{"Only comments", "# nothing\n", ": no header line"},
		{"Header only", header, ": no networks"},
		{"Header without network", "net,country_name\n", `:1:1: header starts with "net"`},
		{"Header without fields", "network\n", ":1:1: header names no fields"},
		{"Repeated field", "network,a,b,a\n", `:1:13: empty or repeated field name "a"`},
		{"Empty field name", "network,a,,b\n", `:1:11: empty or repeated field name ""`},
		{"Bad network", header + "10.0.0.0/8,a,b\nnope,a,b\n", ":3:1: bad network"},
		{"Host bits", header + "10.0.0.1/8,a,b\n", ":2:1: network 10.0.0.1/8 has host bits set (want 10.0.0.0/8)"},
		{"IPv4-mapped", header + "::ffff:10.0.0.0/104,a,b\n", ":2:1: use plain IPv4"},
		{"IPv6 default", header + "::/0,a,b\n", ":2:1: ::/0 cannot be stored"},
		{"Duplicate", header + "10.0.0.0/8,a,b\n# c\n10.0.0.0/8,a,b\n", ":4:1: network 10.0.0.0/8 is already on line 2"},
		{"Too few columns", header + "10.0.0.0/8,a\n", ":2:1: wrong number of fields"},
		{"Too many columns", header + "10.0.0.0/8,a,b,c\n", ":2:1: wrong number of fields"},
		{"Bare quote", header + "10.0.0.0/8,a\"b,c\n", ":2:13: bare \""},
		{"Tab", header + "10.0.0.0/8,a,\"b\tc\"\n", ":2:14: isp_domain value contains a tab"},
	}
	for _, tc := range tests {
		path := writeCSV(t, tc.body)
		_, _, err := ReadCSV(path)
		if err == nil || !strings.Contains(err.Error(), "ipdbgen: "+path+tc.want) {
			t.Errorf("%s: error %v, want \"ipdbgen: %s%s...\"", tc.name, err, path, tc.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.csv")
	if _, _, err := ReadCSV(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadCSV(missing) = %v, want an error naming the file", err)
	}
}
