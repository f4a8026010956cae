package admin

import (
	"encoding/json"
	"github.com/gslbdns/gslb/runstate"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
)

func known(id string) bool { return id == "a" || id == "b" }

func TestStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.yaml")
	since := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	exp := yamlfile.Time{Time: since.Add(2 * time.Hour)}
	lat, lon := 31.2, 121.5
	want := &State{State: runstate.State{
		Drains: []DrainEntry{{Node: "a", Since: yamlfile.Time{Time: since}}},
		Pins: []overrides.EntryYAML{
			{CIDR: "1.2.3.0/24", Nodes: []string{"b"}, Expires: &exp, Note: "ticket 7"},
			{CIDR: "2001:db8::/48", Location: &overrides.LocationYAML{Country: "CN", Province: "SH", Lat: &lat, Lon: &lon}},
		},
		Canary: &CanaryEntry{Identity: "0123abcd", File: "/etc/coredns/candidate.yaml", Percent: 5},
	}}
	if err := want.Write(path, 0); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(path, 0, known)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.DrainsInput(); !d["a"].Since.Equal(since) || len(d) != 1 {
		t.Errorf("Drains: got %v", d)
	}
	if len(got.Pins) != 2 || !got.Pins[0].Expires.Equal(exp.Time) || got.Pins[0].Note != "ticket 7" || *got.Pins[1].Location.Lat != lat {
		t.Errorf("Pins: got %+v", got.Pins)
	}
	if *got.Canary != *want.Canary {
		t.Errorf("Canary: got %+v", got.Canary)
	}
	if empty, err := LoadState(filepath.Join(t.TempDir(), "missing.yaml"), 0, known); err != nil || len(empty.Drains)+len(empty.Pins) != 0 {
		t.Errorf("Expected a missing file to be an empty state, got %+v, %v", empty, err)
	}
}

func TestStateErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"drains:\n  - node: a\n", "field since: missing"},
		{"drains:\n  - node: a\n    since: yesterday\n", `"yesterday" is not a time`},
		{"drains:\n  - node: a\n    since: 2026-01-01T00:00:00Z\n    why: x\n", `unknown key "why"`},
		{"pins:\n  - cidr: 1.2.3.4/24\n    nodes: [a]\n", "line 2: pins[0]"},
		{"pins:\n  - {cidr: 1.2.3.0/24, nodes: [a]}\n  - {cidr: 1.2.3.0/24, nodes: [b]}\n", "pinned twice"},
		{"canary: {identity: x, file: x, percent: 101}\n", "percent: 101 is outside 0..100"},
		{"drain: []\n", `unknown key "drain"`},
	} {
		_, _, err := parseState([]byte(tc.data), known)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: expected an error with %q, got %v", tc.data, tc.want, err)
		}
	}
}

// Drains and pins of nodes the table no longer has are dropped, not fatal:
// a node leaves the table while drained.
func TestStateForgetsRemovedNodes(t *testing.T) {
	s, dropped, err := parseState([]byte(`drains:
  - {node: a, since: 2026-01-01T00:00:00Z}
  - {node: gone, since: 2026-01-01T00:00:00Z}
pins:
  - {cidr: 1.2.3.0/24, nodes: [gone]}
  - {cidr: 1.2.4.0/24, nodes: [a, gone]}
  - {cidr: 1.2.5.0/24, nodes: [gone], location: {country: CN, province: ZJ}}
`), known)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Drains) != 1 || s.Drains[0].Node != "a" {
		t.Errorf("Expected only a's drain, got %+v", s.Drains)
	}
	if len(s.Pins) != 2 || s.Pins[0].CIDR != "1.2.4.0/24" || len(s.Pins[0].Nodes) != 1 || s.Pins[1].Nodes != nil || s.Pins[1].Location == nil {
		t.Errorf("Expected the pins without gone, got %+v", s.Pins)
	}
	if len(dropped) != 4 || !strings.Contains(dropped[0], "line 3: drains[1]") {
		t.Errorf("Expected four notes, the first at line 3, got %q", dropped)
	}
}

// TestStateRejectsAliases: the alias bomb is refused at its line, without
// expanding it; a state file over the limit is refused before it is read.
func TestStateRejectsAliases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(path, []byte("drains:\n  - node: &k bogus\n"+testsupport.AliasBomb("    ")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(path, 0, known); err == nil || !strings.Contains(err.Error(), path+": line 3: an alias (*k) is not allowed") {
		t.Fatalf("Expected the alias refused at line 3, got %v", err)
	}
	if _, err := LoadState(path, 100, known); err == nil || !strings.Contains(err.Error(), "over the size limit of 100 bytes") {
		t.Fatalf("Expected the file refused over its size limit, got %v", err)
	}
}

// TestCheckOverlapLarge: 200k pins are checked in linear time, and the
// network pinned twice is named.
func TestCheckOverlapLarge(t *testing.T) {
	const n = 200_000
	entries := make([]overrides.Entry, 0, n+1)
	for i := range n {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(1 + i>>16), byte(i >> 8), byte(i), 0}), 24)
		entries = append(entries, overrides.Entry{Prefixes: []netip.Prefix{p}})
	}
	if err := checkOverlap(entries); err != nil {
		t.Fatalf("Expected distinct networks to pass, got %v", err)
	}
	entries = append(entries, overrides.Entry{Prefixes: []netip.Prefix{netip.MustParsePrefix("1.1.2.0/24"), netip.MustParsePrefix("1.0.5.0/24")}})
	if err := checkOverlap(entries); err == nil || err.Error() != "pins: 1.1.2.0/24 is pinned twice" {
		t.Fatalf("Expected 1.1.2.0/24 pinned twice, got %v", err)
	}
}

// TestStateFileIsPrivateJSON: the file is plain JSON (jq reads it) and
// readable by its owner only, whatever its mode was: it holds the salt.
func TestStateFileIsPrivateJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &State{State: runstate.State{Drains: []DrainEntry{{Node: "a", Since: yamlfile.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}}}, CanarySalt: "00ff"}}
	if err := st.Write(path, 0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Expected mode 0600, got %v, %v", fi.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil || v["canary_salt"] != "00ff" {
		t.Errorf("Expected plain JSON with the salt, got %v: %s", err, data)
	}
}

// The canary autopilot's step, start and history read back as written;
// a step or a history out of bounds is an error naming the field.
func TestStateAutopilotRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.yaml")
	since := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	plan := &AutopilotEntry{Step: 2, Since: since, Paused: true, History: []AutopilotEvent{
		{At: since.Add(-time.Hour), Action: "start", Percent: 1},
		{At: since, Action: "advance", Percent: 20, Reason: "a \"quoted\"\nline", By: "ns1"}}}
	want := &State{State: runstate.State{Canary: &CanaryEntry{Identity: "0123abcd", File: "c.yaml", Percent: 20, Autopilot: plan}}}
	if err := want.Write(path, 0); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState(path, 0, known)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Canary.Autopilot
	if g == nil || g.Step != 2 || !g.Since.Equal(since) || !g.Paused || len(g.History) != 2 || g.History[1] != plan.History[1] || !g.History[0].At.Equal(plan.History[0].At) {
		t.Errorf("Plan: got %+v, want %+v", g, plan)
	}
	for _, tc := range []struct{ data, want string }{
		{"canary: {identity: x, file: x, percent: 1, autopilot: {step: -1, since: 2026-01-01T00:00:00Z}}\n", "field step: -1 is outside"},
		{"canary: {identity: x, file: x, percent: 1, autopilot: {step: 0, since: 2026-01-01T00:00:00Z, sice: 1}}\n", `sice`},
	} {
		if _, _, err := parseState([]byte(tc.data), known); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: expected an error with %q, got %v", tc.data, tc.want, err)
		}
	}
}
