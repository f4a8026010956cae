package admin

import (
	"github.com/gslbdns/gslb/runstate"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/yamlfile"
)

// TestStateOrigins: the origins of a fleet's keys, deletions included,
// read back as written, one key a line; a file of an earlier release
// (without them) loads; a bad origin is an error naming its key and
// field.
func TestStateOrigins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.yaml")
	at := time.Date(2026, 12, 1, 8, 30, 0, 123456000, time.UTC)
	want := &State{
		State: runstate.State{Drains: []DrainEntry{{Node: "a", Since: yamlfile.Time{Time: at}}}},
		Origins: map[string]KeyOrigin{
			"drain/a": {Member: "ns1:53", Time: yamlfile.Time{Time: at}},
			"drain/b": {Member: "ns2:53", Time: yamlfile.Time{Time: at.Add(time.Second)}, Deleted: true},
		},
	}
	if err := want.Write(path, 0); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "\n    \"drain/b\": {\"member\":\"ns2:53\",") {
		t.Errorf("Expected one origin a line, got\n%s", data)
	}
	got, err := LoadState(path, 0, known)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Origins) != 2 {
		t.Fatalf("Expected 2 origins, got %v", got.Origins)
	}
	for k, w := range want.Origins {
		g := got.Origins[k]
		if g.Member != w.Member || !g.Time.Equal(w.Time.Time) || g.Deleted != w.Deleted {
			t.Errorf("%s: expected %+v, got %+v", k, w, g)
		}
	}

	old := "{\n  \"drains\": [\n    {\"node\":\"a\",\"since\":\"2026-12-01T08:30:00Z\"}\n  ]\n}\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := LoadState(path, 0, known); err != nil || len(st.Drains) != 1 || st.Origins != nil {
		t.Errorf("Expected the earlier format to load without origins, got %+v %v", st, err)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"origins": {"drain/a": {"time": "2026-12-01T08:30:00Z"}}}`, "origins: drain/a: field member: missing"},
		{`{"origins": {"drain/a": {"member": "ns1:53"}}}`, "origins: drain/a: field time: missing"},
	} {
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadState(path, 0, known); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: expected an error with the file and %q, got %v", tc.body, tc.want, err)
		}
	}
}

// TestTooLargeFleet: the 507 of a change the fleet cannot store says so.
func TestTooLargeFleet(t *testing.T) {
	err := &TooLarge{Size: 9 << 20, Limit: 8 << 20, Fleet: true}
	if !strings.Contains(err.Error(), "the fleet's shared state would be about 9437184 bytes, over its limit of 8388608 bytes: the change is not made") {
		t.Errorf("Unexpected message: %v", err)
	}
}
