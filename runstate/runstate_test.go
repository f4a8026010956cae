package runstate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/plan"
)

func known(ids ...string) Known { return func(id string) bool { return slices.Contains(ids, id) } }

func raw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

var since = yamlfile.Time{Time: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		key    string
		kind   string
		shared bool
	}{
		{"drain/a", "drain", true},
		{"pin/10.0.0.0/8", "pin", true},
		{"canary", "canary", true},
		{"salt", "salt", false},
		{"drain/", "", false},
		{"canary/x", "", false},
		{"plan/x", "plan", true},
		{"plan/", "", false},
		{"nope/x", "", false},
	} {
		k, ok := KindOf(tc.key)
		if k.Name != tc.kind || ok != (tc.kind != "") {
			t.Errorf("%s: expected kind %q, got %q (%v)", tc.key, tc.kind, k.Name, ok)
		}
		if Shared(tc.key) != tc.shared {
			t.Errorf("%s: expected shared %v", tc.key, tc.shared)
		}
	}
}

// TestEncodeDecodeRoundTrip: every kind comes back as it was encoded.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	st := &State{
		Drains:     []Drain{{Node: "a", Since: since}},
		Pins:       []Pin{{CIDR: "10.0.0.0/8", Nodes: []string{"b"}, Note: "n"}, {CIDRs: []string{"1.2.3.0/24", "1.2.4.0/24"}, Nodes: []string{"a"}}},
		Canary:     &Canary{Identity: "id", File: "f", Percent: 5},
		CanarySalt: "00ff",
	}
	all := Encode(st, false)
	if len(all) != 5 {
		t.Fatalf("Expected 5 entries, got %v", all)
	}
	if _, ok := all["pin/1.2.3.0/24,1.2.4.0/24"]; !ok {
		t.Errorf("Expected a pin of two networks under both, got %v", all)
	}
	shared := Encode(st, true)
	if _, ok := shared[SaltKey]; ok || len(shared) != 4 {
		t.Errorf("Expected the salt kept out of the shared entries, got %v", shared)
	}
	back, skipped := Decode(all, known("a", "b"))
	if len(skipped) != 0 {
		t.Fatalf("Expected nothing skipped, got %v", skipped)
	}
	if len(back.Drains) != 1 || back.Drains[0].Node != "a" || !back.Drains[0].Since.Equal(since.Time) {
		t.Errorf("Drains: got %+v", back.Drains)
	}
	if len(back.Pins) != 2 || back.Canary == nil || back.Canary.Percent != 5 || back.CanarySalt != "00ff" {
		t.Errorf("Got %+v", back)
	}
	if d := back.DrainsInput(); !d["a"].Drained || !d["a"].Since.Equal(since.Time) || len(d) != 1 {
		t.Errorf("DrainsInput: got %v", d)
	}
}

// TestDecodeSkipsBadEntries: a malformed entry, an entry of a key no kind
// has, a drain under another node's key and an overlapping pin are each
// left out and said, and never stop the others.
func TestDecodeSkipsBadEntries(t *testing.T) {
	entries := map[string]json.RawMessage{
		"drain/a":                   raw(Drain{Node: "a", Since: since}),
		"drain/b":                   json.RawMessage(`{"node":`),
		"drain/c":                   raw(Drain{Node: "a", Since: since}),
		"drain/d":                   raw(Drain{Node: "d"}),
		"drain/gone":                raw(Drain{Node: "gone", Since: since}),
		"pin/10.0.0.0/8":            raw(Pin{CIDR: "10.0.0.0/8", Nodes: []string{"a"}}),
		"pin/10.0.0.0/9":            raw(Pin{CIDR: "10.0.0.0/8", Nodes: []string{"a"}}),
		"pin/10.0.0.0/8,11.0.0.0/8": raw(Pin{CIDRs: []string{"10.0.0.0/8", "11.0.0.0/8"}, Nodes: []string{"a"}}),
		"pin/12.0.0.0/8":            raw(Pin{CIDR: "12.0.0.0/8", Nodes: []string{"a", "gone"}}),
		"pin/13.0.0.0/8":            raw(Pin{CIDR: "13.0.0.0/8", Nodes: []string{"gone"}}),
		"canary":                    raw(Canary{Identity: "x", Percent: 101}),
		"weird":                     raw(1),
		"drain/deleted":             nil,
	}
	st, skipped := Decode(entries, known("a"))
	if len(st.Drains) != 1 || st.Drains[0].Node != "a" {
		t.Errorf("Expected only drain a, got %+v", st.Drains)
	}
	if len(st.Pins) != 2 || st.Pins[0].CIDR != "10.0.0.0/8" || st.Pins[1].CIDR != "12.0.0.0/8" || !slices.Equal(st.Pins[1].Nodes, []string{"a"}) {
		t.Errorf("Expected the pins of 10/8 and of 12/8 without its unknown node, got %+v", st.Pins)
	}
	if st.Canary != nil {
		t.Errorf("Expected the canary of 101%% left out, got %+v", st.Canary)
	}
	got := map[string]Skip{}
	for _, s := range skipped {
		got[s.Key] = s
	}
	for key, want := range map[string]struct {
		bad  bool
		text string
	}{
		"drain/b":                   {true, "not a drain"},
		"drain/c":                   {true, `"a", not "c"`},
		"drain/d":                   {true, "since: missing"},
		"drain/gone":                {false, "not in the node table"},
		"pin/10.0.0.0/9":            {true, "under pin/10.0.0.0/9"},
		"pin/10.0.0.0/8,11.0.0.0/8": {true, "10.0.0.0/8 is pinned by pin/10.0.0.0/8 too"},
		"pin/12.0.0.0/8":            {false, "[gone]"},
		"pin/13.0.0.0/8":            {false, "[gone]"},
		"canary":                    {true, "outside 0..100"},
		"weird":                     {true, "no kind"},
	} {
		s, ok := got[key]
		if !ok || s.Bad != want.bad || !strings.Contains(s.Reason, want.text) {
			t.Errorf("%s: expected skipped (bad %v) with %q, got %+v (%v)", key, want.bad, want.text, s, ok)
		}
	}
	if len(skipped) != 10 {
		t.Errorf("Expected 10 skipped, got %v", skipped)
	}
}

// TestApplyAllOrNothing: Apply makes every change in a new map, or none.
func TestApplyAllOrNothing(t *testing.T) {
	cur := map[string]json.RawMessage{"drain/a": raw(Drain{Node: "a", Since: since})}
	next, err := Apply(cur, SetDrain("a", false, time.Time{}), SetDrain("b", true, since.Time), Change{Key: "canary", Value: json.RawMessage("null")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := next["drain/a"]; ok || next["drain/b"] == nil || len(next) != 1 {
		t.Errorf("Expected drain/b alone, got %v", next)
	}
	if cur["drain/a"] == nil {
		t.Errorf("Expected the current entries untouched")
	}
	for _, bad := range [][]Change{
		{SetDrain("c", true, since.Time), {Key: "nope", Value: raw(1)}},
		{SetDrain("c", true, since.Time), {Key: "drain/d", Value: json.RawMessage("{")}},
	} {
		if out, err := Apply(cur, bad...); err == nil || out != nil {
			t.Errorf("Expected an error and nothing applied for %v, got %v", bad, out)
		}
	}
	if got := Touched([]Change{{Key: "x"}, {Key: "y"}}); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("Touched: got %v", got)
	}
}

func TestCheckPin(t *testing.T) {
	loc := &overrides.LocationYAML{Country: "CN", Province: "ZJ"}
	for _, tc := range []struct {
		pin   Pin
		keep  bool
		nodes []string
		err   string
	}{
		{Pin{CIDR: "10.0.0.0/8", Nodes: []string{"a"}}, true, []string{"a"}, ""},
		{Pin{CIDR: "10.0.0.0/8", Nodes: []string{"a", "z"}}, true, []string{"a"}, ""},
		{Pin{CIDR: "10.0.0.0/8", Nodes: []string{"z"}}, false, nil, ""},
		{Pin{CIDR: "10.0.0.0/8", Nodes: []string{"z"}, Location: loc}, true, nil, ""},
		{Pin{Nodes: []string{"a"}}, false, nil, "cidr"},
	} {
		out, _, keep, err := CheckPin(tc.pin, known("a"))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: expected an error with %q, got %v", tc.pin, tc.err, err)
			}
			continue
		}
		if err != nil || keep != tc.keep || keep && !slices.Equal(out.Nodes, tc.nodes) {
			t.Errorf("%+v: expected keep %v nodes %v, got %v %v %v", tc.pin, tc.keep, tc.nodes, keep, out.Nodes, err)
		}
	}
	if _, _, keep, err := CheckPin(Pin{CIDR: "10.0.0.0/8", Nodes: []string{"z"}}, nil); !keep || err != nil {
		t.Errorf("Expected every node known without a table, got %v %v", keep, err)
	}
}

func TestCheckDrainAndCanary(t *testing.T) {
	if keep, err := CheckDrain(Drain{Node: "a", Since: since}, known()); keep || err != nil {
		t.Errorf("Expected an unknown node's drain dropped, got %v %v", keep, err)
	}
	if _, err := CheckDrain(Drain{Since: since}, nil); err == nil || !strings.Contains(err.Error(), "node: missing") {
		t.Errorf("Expected a missing node, got %v", err)
	}
	if err := CheckCanary(&Canary{Percent: -1}); err == nil {
		t.Errorf("Expected -1%% refused")
	}
}

// TestPlanKind: a plan is an entry under plan/NAME, shared, and comes back
// with its last execution; one under another name's key, or one that
// changes nothing, is left out as bad.
func TestPlanKind(t *testing.T) {
	share := 20.0
	st := &State{Plans: []plan.Stored{{
		Plan: plan.Plan{Name: "east", Drain: []string{"a"}, Canary: &share},
		Last: &plan.Execution{Action: plan.ActionExecute, By: "ops", At: since, Before: map[string]string{"drain/a": ""}},
	}}}
	shared := Encode(st, true)
	if _, ok := shared["plan/east"]; !ok || len(shared) != 1 {
		t.Fatalf("Expected the plan shared under plan/east, got %v", shared)
	}
	back, skipped := Decode(shared, known("a"))
	if len(skipped) != 0 || len(back.Plans) != 1 {
		t.Fatalf("Expected the plan back, got %+v, skipped %v", back.Plans, skipped)
	}
	if p := back.Plans[0]; p.Name != "east" || !p.Executed() || p.Last.By != "ops" || *p.Canary != 20 || p.Last.Before["drain/a"] != "" {
		t.Errorf("Got %+v", p)
	}
	bad := map[string]json.RawMessage{
		"plan/west":  shared["plan/east"],
		"plan/empty": raw(plan.Stored{Plan: plan.Plan{Name: "empty"}}),
		"plan/junk":  json.RawMessage(`[1]`),
	}
	back, skipped = Decode(bad, nil)
	if len(back.Plans) != 0 || len(skipped) != 3 || slices.ContainsFunc(skipped, func(s Skip) bool { return !s.Bad }) {
		t.Errorf("Expected three bad plans left out, got %+v, skipped %v", back.Plans, skipped)
	}
}
