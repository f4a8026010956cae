package control

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// write puts content at path.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace writes content beside path and renames it over path, as
// geoipupdate does: a new inode.
func replace(t *testing.T, path, content string) {
	t.Helper()
	write(t, path+".tmp", content)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// A text file's change counts once it looked the same on two checks in a
// row; the loaded content on disk again is no change.
func TestWatcherTextSettles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes.yaml")
	write(t, path, "one")
	w := newWatcher(map[string][32]byte{path: sha256.Sum256([]byte("one"))}, nil, 1<<20)

	if got := w.textChanged(path); got != nil {
		t.Fatalf("Unchanged file: got %q, want nothing", got)
	}
	write(t, path, "two")
	if got := w.textChanged(path); got != nil {
		t.Fatalf("First sight of a change: got %q, want nothing until it settles", got)
	}
	write(t, path, "three") // still being written
	if got := w.textChanged(path); got != nil {
		t.Fatalf("A file that changed again: got %q, want nothing until it settles", got)
	}
	if got := w.textChanged(path); string(got) != "three" {
		t.Fatalf("Settled change: got %q, want %q", got, "three")
	}
	w.loaded(path)
	if got := w.textChanged(path); got != nil {
		t.Fatalf("The loaded content: got %q, want nothing", got)
	}
	// A change that goes back to the loaded content before it settles is
	// no change.
	write(t, path, "four")
	w.textChanged(path)
	write(t, path, "three")
	for range 2 {
		if got := w.textChanged(path); got != nil {
			t.Fatalf("Back to the loaded content: got %q, want nothing", got)
		}
	}
}

// A rejected content is reported once, counted, and marks the file bad
// while it is on disk; the serving content back on disk clears it.
func TestWatcherRejectsOnce(t *testing.T) {
	logs := captureLog(t)
	path := filepath.Join(t.TempDir(), "overrides.yaml")
	write(t, path, "good")
	w := newWatcher(map[string][32]byte{path: sha256.Sum256([]byte("good"))}, nil, 1<<20)
	w.serve()
	defer w.unserve()
	parse := func(data []byte) (string, error) {
		if strings.HasPrefix(string(data), "bad") {
			return "", errors.New("overrides.yaml: line 1: bad entry")
		}
		return string(data), nil
	}
	errs := testutil.ToFloat64(reloads.WithLabelValues("error"))

	write(t, path, "bad")
	for i := range 4 {
		if _, ok := reloadText(w, path, parse); ok {
			t.Fatalf("Check %d: a bad file was loaded", i)
		}
	}
	if got := testutil.ToFloat64(reloads.WithLabelValues("error")) - errs; got != 1 {
		t.Errorf("Expected one rejected reload counted, got %v", got)
	}
	if n := strings.Count(logs.String(), "Rejected reload, keeping the previous version: overrides.yaml: line 1: bad entry"); n != 1 {
		t.Errorf("Expected the rejection logged once, got %d times in %q", n, logs)
	}
	if v, ok := fileOKOf(t, path); !ok || v != 0 {
		t.Errorf("Expected file_ok 0 for the rejected file, got %v (series %v)", v, ok)
	}

	write(t, path, "good")
	if _, ok := reloadText(w, path, parse); ok {
		t.Fatal("The serving content back on disk was loaded again")
	}
	if v, _ := fileOKOf(t, path); v != 1 {
		t.Errorf("Expected file_ok 1 once the serving content is back, got %v", v)
	}
	if !strings.Contains(logs.String(), "In service again: "+path) {
		t.Errorf("Expected the all-clear in the log, got %q", logs)
	}

	// A good change settles and loads.
	write(t, path, "better")
	reloadText(w, path, parse)
	if v, ok := reloadText(w, path, parse); !ok || v != "better" {
		t.Errorf("Expected the settled good change loaded, got %q %v", v, ok)
	}
}

// An unreadable file is counted at every check but logged once per
// distinct error.
func TestWatcherReadErrorLoggedOnce(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "quality.yaml")
	w := newWatcher(map[string][32]byte{path: sha256.Sum256([]byte("x"))}, nil, 4)
	errs := testutil.ToFloat64(reloads.WithLabelValues("error"))
	for range 3 {
		w.textChanged(path) // missing
	}
	write(t, path, "larger than four bytes")
	for range 2 {
		w.textChanged(path)
	}
	if got := testutil.ToFloat64(reloads.WithLabelValues("error")) - errs; got != 5 {
		t.Errorf("Expected 5 failed checks counted, got %v", got)
	}
	out := logs.String()
	if n := strings.Count(out, "Rejected reload"); n != 2 {
		t.Errorf("Expected two distinct errors logged, got %d: %q", n, out)
	}
	if !strings.Contains(out, "no such file") || !strings.Contains(out, "over the size limit of 4 bytes") {
		t.Errorf("Expected the missing file and the size limit in the log, got %q", out)
	}
}

// Databases are compared by time, size and inode: a rename over the file
// counts once it settled, and a path added after a reload counts once.
func TestWatcherDatabases(t *testing.T) {
	dir := t.TempDir()
	db, other := filepath.Join(dir, "city.mmdb"), filepath.Join(dir, "v4.xdb")
	write(t, db, "v1")
	write(t, other, "x")
	w := newWatcher(nil, []string{db}, 1<<20)
	if got := w.dbsChanged(); got != nil {
		t.Fatalf("Unchanged database: %v", got)
	}
	replace(t, db, "v2") // same size, maybe the same mtime: a new inode
	if got := w.dbsChanged(); got != nil {
		t.Fatalf("First sight of a change: %v, want nothing until it settles", got)
	}
	if got := w.dbsChanged(); !slices.Equal(got, []string{db}) {
		t.Fatalf("Settled change: %v, want [%s]", got, db)
	}
	if got := w.dbsChanged(); got != nil {
		t.Fatalf("After the change was taken: %v", got)
	}

	w.watchDBs([]string{db, other})
	w.dbsChanged()
	if got := w.dbsChanged(); !slices.Equal(got, []string{other}) {
		t.Fatalf("A path new after a reload: %v, want [%s] once settled", got, other)
	}
	if got := w.files(); !slices.Equal(got, []string{db, other}) {
		t.Errorf("files() = %v", got)
	}
}

// A rejected database is bad until the databases load again.
func TestWatcherDatabaseFailed(t *testing.T) {
	logs := captureLog(t)
	db := filepath.Join(t.TempDir(), "city.mmdb")
	write(t, db, "v1")
	w := newWatcher(nil, []string{db}, 1<<20)
	w.serve()
	defer w.unserve()
	w.dbsFailed([]string{db}, "geoip", errors.New("geoip: city.mmdb: not a database"))
	if v, _ := fileOKOf(t, db); v != 0 {
		t.Errorf("Expected file_ok 0 after a rejected database, got %v", v)
	}
	if !strings.Contains(logs.String(), "geoip: city.mmdb: not a database") {
		t.Errorf("Expected the rejection in the log, got %q", logs)
	}
	w.dbsLoaded()
	if v, _ := fileOKOf(t, db); v != 1 {
		t.Errorf("Expected file_ok 1 once the databases load, got %v", v)
	}
	w.unserve()
	if _, ok := fileOKOf(t, db); ok {
		t.Error("Expected no file_ok series once the instance stops serving")
	}
}

func TestReadFileNamesKind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodes.yaml")
	write(t, path, "0123456789")
	if data, err := readFile("node table", path, 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("At the limit: %q %v", data, err)
	}
	for _, tc := range []struct {
		path  string
		limit int64
		want  string
	}{
		{path, 9, "node table: " + path + ": 10 bytes, over the size limit of 9 bytes"},
		{filepath.Join(dir, "missing.yaml"), 10, "node table: open " + filepath.Join(dir, "missing.yaml")},
	} {
		if _, err := readFile("node table", tc.path, tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("readFile(%s, %d) = %v, want %q", tc.path, tc.limit, err, tc.want)
		}
	}
}
