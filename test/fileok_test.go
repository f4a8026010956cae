package test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
)

// TestFileOK: a rejected reload sets coredns_gslb_file_ok of the file to
// 0; a good file in its place, or the serving version put back, logs that
// the file on disk is in service again and sets it to 1. A database's
// series does the same; a Corefile reload that drops a file drops its
// series.
func TestFileOK(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city := filepath.Join(dir, "City.mmdb")
	writeCity(t, city, "ZJ", "Hangzhou")
	good := reloadNodes("192.0.2.10", "")
	nodes := writeFile(t, dir, "nodes.yaml", good)
	over := writeFile(t, dir, "overrides.yaml", "overrides: []\n")
	conf := func(extra string) string {
		return fmt.Sprintf("example.org:0 {\n bind 127.0.0.1\n gslb {\n  geoip %s\n  nodes %s\n  reload 1s\n  %s\n }\n}", city, nodes, extra)
	}
	s := startServer(t, conf("overrides "+over))
	waitOK := func(file string, want float64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("file_ok{file=%q} %v", file, want), func() (bool, string) {
			v := gaugeValue(t, "coredns_gslb_file_ok", "file", file)
			return v == want, fmt.Sprint(v)
		})
	}
	for _, f := range []string{nodes, over, city} {
		waitOK(f, 1)
	}

	// Rejected, then fixed with another table.
	writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.77", "    bogus: 1\n"))
	logs.line(t, "Rejected reload")
	waitOK(nodes, 0)
	waitOK(over, 1)
	writeFile(t, dir, "nodes.yaml", reloadNodes("192.0.2.78", ""))
	logs.line(t, "In service again: "+nodes+", the file on disk is the one serving")
	waitOK(nodes, 1)
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, "202.101.172.0/24")); got != "192.0.2.78" {
		t.Errorf("Answer %s after the fix, want 192.0.2.78", got)
	}

	// Rejected, then the serving version put back: nothing reloads, and
	// the file is in service again all the same.
	logs.Reset()
	writeFile(t, dir, "overrides.yaml", "overrides: [\n")
	logs.line(t, "Rejected reload")
	waitOK(over, 0)
	writeFile(t, dir, "overrides.yaml", "overrides: []\n")
	logs.line(t, "In service again: "+over)
	waitOK(over, 1)

	// A database that does not open, then a good one.
	logs.Reset()
	if err := os.WriteFile(city+".tmp", []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(city+".tmp", city); err != nil {
		t.Fatal(err)
	}
	logs.line(t, "Rejected reload")
	waitOK(city, 0)
	writeCity(t, city, "ZJ", "Hangzhou")
	logs.line(t, "In service again: "+city)
	waitOK(city, 1)

	// A Corefile without the overrides: their series goes.
	s.restart(t, conf(""))
	waitFor(t, "no file_ok series of the dropped overrides", func() (bool, string) {
		v := gaugeValue(t, "coredns_gslb_file_ok", "file", over)
		return v == -1, fmt.Sprint(v)
	})
	waitOK(nodes, 1)
}
