package control

import (
	"encoding/json"
	"github.com/gslbdns/gslb/runstate"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/yamlfile"
)

// TestChangesTouched: what the fleet is told is what changed since the
// member last shared, and every touched key, held already or not.
func TestChangesTouched(t *testing.T) {
	c := &Control{shared: map[string]json.RawMessage{
		"drain/a": json.RawMessage(`{"node":"a"}`),
		"drain/b": json.RawMessage(`{"node":"b"}`),
	}}
	next := map[string]json.RawMessage{
		"drain/a":       json.RawMessage(`{"node":"a"}`),
		"pin/1.0.0.0/8": json.RawMessage(`{"cidr":"1.0.0.0/8"}`),
	}
	got := map[string]string{}
	for _, ch := range c.changes(next, []string{"drain/a", "drain/c"}) {
		got[ch.Key] = string(ch.Value)
	}
	want := map[string]string{
		"drain/a":       `{"node":"a"}`,         // touched: the same value, shared again
		"drain/b":       "",                     // gone: a deletion
		"drain/c":       "",                     // touched, never held: a deletion all the same
		"pin/1.0.0.0/8": `{"cidr":"1.0.0.0/8"}`, // new
	}
	if len(got) != len(want) {
		t.Fatalf("Expected %v, got %v", want, got)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: expected %q, got %q (%v)", k, v, g, ok)
		}
	}
	if n := len(c.changes(map[string]json.RawMessage{"drain/a": json.RawMessage(`{"node":"a"}`), "drain/b": json.RawMessage(`{"node":"b"}`)}, nil)); n != 0 {
		t.Errorf("Expected nothing to tell without a change or a touched key, got %d", n)
	}
}

// TestSeedOfOrigins: the state file's origins seed the fleet's entries,
// deletions included; an entry without one is older than any change.
func TestSeedOfOrigins(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	st := &admin.State{
		State: runstate.State{Drains: []admin.DrainEntry{{Node: "a", Since: yamlfile.Time{Time: at}}, {Node: "b", Since: yamlfile.Time{Time: at}}}},
		Origins: map[string]admin.KeyOrigin{
			"drain/a": {Member: "ns2:53", Time: yamlfile.Time{Time: at.Add(time.Minute)}},
			"drain/c": {Member: "ns1:53", Time: yamlfile.Time{Time: at.Add(2 * time.Minute)}, Deleted: true},
		},
	}
	s := seedOf(st, "ns1:53")
	if e := s.Entries["drain/a"]; e.Deleted() || e.Origin.Member != "ns2:53" || !e.Origin.Time.Equal(at.Add(time.Minute)) {
		t.Errorf("drain/a: expected ns2:53's drain, got %+v", e)
	}
	if e := s.Entries["drain/b"]; e.Deleted() || e.Origin.Member != "ns1:53" || !e.Origin.Time.IsZero() {
		t.Errorf("drain/b: expected this member's, at time zero, got %+v", e)
	}
	if e, ok := s.Entries["drain/c"]; !ok || !e.Deleted() || !e.Origin.Time.Equal(at.Add(2*time.Minute)) {
		t.Errorf("drain/c: expected the deletion kept with its time, got %+v %v", e, ok)
	}
}

// TestNodeHint: a mistyped node id gets the nearest id of the table, one
// near none gets no guess.
func TestNodeHint(t *testing.T) {
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	c := newTestControl(t, dir, "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\n}")
	ids := []string{}
	for _, n := range c.Table().Nodes {
		ids = append(ids, n.ID)
	}
	id := ids[0]
	typo := id[:len(id)-1] + "q"
	if id[len(id)-1] == 'q' {
		typo = id[:len(id)-1] + "z"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, want := c.nodeHint(typo), ` (did you mean "`+id+`"?)`; got != want {
		t.Errorf("%s: expected %q, got %q (ids %v)", typo, want, got, ids)
	}
	if got := c.nodeHint("completely-unrelated-name"); got != "" {
		t.Errorf("Expected no guess, got %q", got)
	}
}
