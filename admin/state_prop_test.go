package admin

import (
	"github.com/gslbdns/gslb/runstate"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
)

// pieces are what breaks YAML writers: line breaks, leading and trailing
// blanks, tabs, comment and key markers, quotes, indicators, unicode, NUL.
var pieces = []string{"\n", "\r\n", "\r", " ", "  ", "\t", "#", ": ", "- ", "'", "\"", "\\", "|", ">", "&a", "*a", "!!str",
	"{", "}", "[", "]", ",", "%", "@", "`", "---", "...", "~", "null", "true", "0x1F", "1e3", "杭州", "电信", "é", "\u2028",
	"\u0085", "\ufeff", "\x00", "\x01", "\x7f", "😀", "x", "ticket 4711", "moved by oncall"}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(8); n >= 0; n-- {
		if r.IntN(4) == 0 {
			b.WriteRune(rune(r.IntN(0x10000)))
		} else {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
	}
	return b.String()
}

// TestStateRandomStrings: every note and city the API accepts reads back
// from the state file as it was, and the file always loads.
func TestStateRandomStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 1))
	path := filepath.Join(t.TempDir(), "state.yaml")
	since := yamlfile.Time{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	accepted := 0
	const rounds = 2500
	for i := range rounds {
		note, city := randomText(r), randomText(r)
		pin := overrides.EntryYAML{CIDR: "58.208.0.0/16", Nodes: []string{"a"}, Note: note,
			Location: &overrides.LocationYAML{Country: "CN", Province: "ZJ", City: city}}
		if _, err := CheckPin(&pin); err != nil {
			t.Fatalf("round %d: valid UTF-8 refused: note %q city %q: %v", i, note, city, err)
		}
		accepted++
		st := &State{State: runstate.State{Drains: []DrainEntry{{Node: "b", Since: since}}, Pins: []overrides.EntryYAML{pin}}}
		var got *State
		var err error
		if i%100 == 0 { // through the file now and then: fsync is slow
			if err := st.Write(path, 0); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			got, err = LoadState(path, 0, known)
		} else {
			data, merr := st.Marshal()
			if merr != nil {
				t.Fatalf("round %d: %v", i, merr)
			}
			got, _, err = parseState(data, known)
		}
		if err != nil {
			t.Fatalf("round %d: the file does not load: %v (note %q city %q)", i, err, note, city)
		}
		if len(got.Pins) != 1 || got.Pins[0].Note != note || got.Pins[0].Location.City != city || len(got.Drains) != 1 {
			t.Fatalf("round %d: wrote note %q city %q, read back %+v", i, note, city, got.Pins)
		}
	}
	// Invalid UTF-8 cannot be stored exactly: refused, not changed.
	bad := overrides.EntryYAML{CIDR: "58.208.0.0/16", Nodes: []string{"a"}, Note: "ok\xff"}
	if _, err := CheckPin(&bad); err == nil {
		t.Errorf("Expected a note of invalid UTF-8 refused")
	}
	t.Logf("%d of %d random notes stored and read back", accepted, rounds)
}
