package edgeagent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gslbdns/gslb/resolvers"
)

// TestBeaconsInBatches: an interval's beacon fetches go out in requests
// the server takes (at most resolvers.MaxReports lines each), all of
// them: one request of them all was refused whole.
func TestBeaconsInBatches(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sizes = append(sizes, bytes.Count(body, []byte("\n")))
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(dir, "access.log")
	if err := os.WriteFile(logf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Log: logf, Format: "json", TokenFile: tok, SpoolDir: filepath.Join(dir, "spool"), OffsetFile: filepath.Join(dir, "offset"),
		URL: srv.URL, BeaconURL: srv.URL, Beacon: "b.example.org", MaxRows: 50000, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*resolvers.MaxReports + 7
	for i := range n {
		a.beacons = append(a.beacons, resolvers.Report{Label: strconv.Itoa(i), Client: "1.0.1.0/24"})
	}
	a.sendBeacons(context.Background())
	total := 0
	for _, s := range sizes {
		total += s
		if s > resolvers.MaxReports {
			t.Errorf("A request of %d reports, over the server's %d", s, resolvers.MaxReports)
		}
	}
	if total != n || a.nbeacons != n {
		t.Errorf("Posted %d of %d (counted %d), in %v", total, n, a.nbeacons, sizes)
	}
}
