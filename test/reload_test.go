package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"

	"github.com/miekg/dns"
)

// reloadNodes is a table whose hz-telecom address the test changes.
func reloadNodes(hzAddr, extra string) string {
	return fmt.Sprintf(`nodes:
  - id: hz-telecom
    ipv4: [%s]
    country: CN
    province: ZJ
    isp: telecom
    lat: 30.27
    lon: 120.16
%s  - id: bj-unicom
    ipv4: [198.51.100.10]
    country: CN
    province: BJ
    isp: unicom
    lat: 39.90
    lon: 116.41
records:
  - name: www.example.org
`, hzAddr, extra)
}

func writeCity(t *testing.T, path, province, city string) {
	t.Helper()
	if err := mmdbgen.WriteCity(path, []mmdbgen.City{
		{Network: "202.101.172.0/24", Country: "CN", Province: province, City: city, Lat: 30.27, Lon: 120.16, Radius: 20},
	}); err != nil {
		t.Fatalf("Cannot write %s: %v", path, err)
	}
}

// TestFileReload: with `reload 1s`, a changed node file or City database is
// picked up, and a broken node file is rejected while the previous table
// keeps serving.
func TestFileReload(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	writeCity(t, city, "ZJ", "Hangzhou")
	nodes := writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.10", ""))
	// The serial is the newest file time in seconds: the first table is
	// older, so that the change below moves it.
	if old := time.Now().Add(-time.Hour); os.Chtimes(nodes, old, old) != nil {
		t.Fatal("Cannot set the node table's time")
	}
	s := startServer(t, fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    gslb {
        geoip %s
        nodes %s
        reload 1s
    }
}`, city, nodes))
	const zj = "202.101.172.0/24"
	serial := func() uint32 {
		r := ask(t, s, "example.org", dns.TypeSOA, "")
		if len(r.Answer) != 1 {
			t.Fatalf("SOA query answered %v", r.Answer)
		}
		return r.Answer[0].(*dns.SOA).Serial
	}
	waitAnswer := func(want string) {
		t.Helper()
		waitFor(t, "answer "+want, func() (bool, string) {
			got := answerOf(ask(t, s, "www.example.org", dns.TypeA, zj))
			return got == want, got
		})
	}
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, zj)); got != "192.0.2.10" {
		t.Fatalf("Answer %q, want 192.0.2.10", got)
	}
	serial0 := serial()

	// The watcher compares mtime and size, and mtimes are as coarse as the
	// kernel tick: each rewrite changes the size.
	writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.199", ""))
	waitAnswer("192.0.2.199")
	serial1 := serial()
	if serial1 <= serial0 {
		t.Errorf("SOA serial %d after a table change, want above %d", serial1, serial0)
	}

	// An unknown key: rejected, the previous table keeps serving.
	writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.77", "    bogus: 1\n"))
	logs.line(t, "Rejected reload")
	for range 5 {
		if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, zj)); got != "192.0.2.199" {
			t.Fatalf("Answer %q after a broken node file, want the previous 192.0.2.199", got)
		}
	}
	if got := serial(); got != serial1 {
		t.Errorf("SOA serial %d after a rejected file, want %d", got, serial1)
	}
	if !strings.Contains(logs.line(t, "Rejected reload"), "bogus") {
		t.Errorf("Rejection does not name the bad key: %s", logs.line(t, "Rejected reload"))
	}

	// The watcher is still alive: a fixed file is taken.
	writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.77", ""))
	waitAnswer("192.0.2.77")

	// The City database moves the /24 to Beijing: the answer follows.
	writeCity(t, city, "BJ", "Beijing")
	waitAnswer("198.51.100.10")
}
