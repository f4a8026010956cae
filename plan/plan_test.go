package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/scoring"
)

func known(id string) bool { return id == "hz-a" || id == "sh" || id == "bj" }

func TestParse(t *testing.T) {
	tests := []struct {
		name, body, err string
	}{
		{"zj-down", `{"drain": ["hz-a"], "pin": [{"cidr": "1.2.3.0/24", "nodes": ["sh"]}]}`, ""},
		{"zj-down", `{"name": "zj-down", "canary_percent": 5}`, ""},
		{"zj-down", `{"name": "other", "drain": ["hz-a"]}`, `name: "other" in the body`},
		{"zj-down", `{"drains": ["hz-a"]}`, `body: json: unknown field "drains"`},
		{"zj-down", `{"drain": ["hz-a"]} {}`, "more than one JSON value"},
		{"zj-down", `{"drain": "hz-a"}`, "body: json: cannot unmarshal"},
		{"../x", `{"drain": ["hz-a"]}`, `name: "../x" is not`},
		{strings.Repeat("a", 65), `{}`, "is not 1 to 64"},
		{"big", `{"note": "` + strings.Repeat("x", MaxBody) + `"}`, "over the limit"},
	}
	for _, tc := range tests {
		p, err := Parse(tc.name, []byte(tc.body))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q, %s): %v", tc.name, tc.body, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q, %.40s): expected an error with %q, got %v", tc.name, tc.body, tc.err, err)
		case tc.err == "" && p.Name != tc.name:
			t.Errorf("Parse(%q): name %q", tc.name, p.Name)
		}
	}
}

func TestCheck(t *testing.T) {
	env := Env{Known: known, Hint: func(id string) string { return ` (did you mean "hz-a"?)` }, Canary: true}
	tests := []struct {
		body, err string
	}{
		{`{"drain": ["hz-a", "sh"], "undrain": ["bj"], "pin": [{"cidr": "1.2.3.0/24", "nodes": ["bj"]}], "unpin": ["9.0.0.0/8"], "canary_percent": 10}`, ""},
		{`{}`, "changes nothing"},
		{`{"drain": ["hz-b"]}`, `drain[0]: node "hz-b" is not in the node table (did you mean "hz-a"?)`},
		{`{"drain": ["hz-a", "hz-a"]}`, `drain[1]: node "hz-a" is in drain[0] already`},
		{`{"drain": ["hz-a"], "undrain": ["hz-a"]}`, `undrain[0]: node "hz-a" is in drain[0] too`},
		{`{"undrain": [""]}`, `undrain[0]: empty node id`},
		{`{"pin": [{"cidr": "1.2.3.4/24", "nodes": ["sh"]}]}`, `pin[0]: field cidr: 1.2.3.4/24 has bits set`},
		{`{"pin": [{"cidr": "1.2.3.0/24", "nodes": ["sh"]}, {"cidr": "1.2.3.0/24", "nodes": ["bj"]}]}`, `pin[1]: field cidr: 1.2.3.0/24 is pinned by pin[0] already`},
		{`{"pin": [{"cidr": "1.2.3.0/24", "nodes": ["xx"]}]}`, `pin[0].nodes[0]: node "xx" is not in the node table`},
		{`{"drain": ["sh"], "pin": [{"cidr": "1.2.3.0/24", "nodes": ["sh"]}]}`, `pin[0]: field nodes: every node of the pin is in drain`},
		{`{"pin": [{"cidr": "1.2.3.0/24"}]}`, `pin[0]: `},
		{`{"unpin": ["nonsense"]}`, `unpin[0]: "nonsense" is not a network`},
		{`{"pin": [{"cidr": "1.2.3.0/24", "nodes": ["sh"]}], "unpin": ["1.2.3.0/24"]}`, `unpin[0]: 1.2.3.0/24 is in pin[0]`},
		{`{"canary_percent": 101}`, `canary_percent: 101 is outside 0..100`},
	}
	for _, tc := range tests {
		p, err := Parse("p", []byte(tc.body))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.body, err)
		}
		err = p.Check(env)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Check(%s): %v", tc.body, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Check(%s): expected an error with %q, got %v", tc.body, tc.err, err)
		}
	}
	p, _ := Parse("p", []byte(`{"canary_percent": 1}`))
	if err := p.Check(Env{Known: known}); err == nil || !strings.Contains(err.Error(), "canary_percent: no canary line") {
		t.Errorf("Expected the canary share refused without a canary line, got %v", err)
	}
}

// TestStoredJSON: a stored plan keeps its fields flat, with its last
// execution and what each key held before.
func TestStoredJSON(t *testing.T) {
	p, _ := Parse("zj", []byte(`{"drain": ["hz-a"]}`))
	s := Stored{Plan: *p, Last: &Execution{Action: ActionExecute, By: "127.0.0.1:5", Before: map[string]string{"drain/hz-a": ""}}}
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"zj"`, `"drain":["hz-a"]`, `"action":"execute"`, `"before":{"drain/hz-a":""}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Expected %s in %s", want, data)
		}
	}
	var back Stored
	if err := json.Unmarshal(data, &back); err != nil || !back.Executed() || back.Name != "zj" {
		t.Errorf("Read back %+v, %v", back, err)
	}
}

// TestEstimate: half the clients on hz-a (load 0.5), half on bj (0.3);
// draining hz-a sends its half to sh, which had none: sh is charged the
// mean load per share, 0.8, so 0.5 + 0.5 × 0.8 = 0.9 passes 0.8.
func TestEstimate(t *testing.T) {
	var samples []Sample
	for i := range 100 {
		node := "hz-a"
		if i%2 == 1 {
			node = "bj"
		}
		samples = append(samples, Sample{Node: node, Client: scoring.Client{Province: map[string]string{"hz-a": "ZJ", "bj": "BJ"}[node]}})
	}
	decide := func(s *Sample) string {
		if s.Client.Province == "ZJ" {
			return "sh"
		}
		return "bj"
	}
	loads := map[string]float64{"hz-a": 0.5, "sh": 0.5, "bj": 0.3}
	r := Estimate(samples, decide, loads, map[string]bool{"hz-a": true}, 0.8)
	if r.Ready || len(r.Over) != 1 || r.Over[0] != "sh" || r.Samples != 100 {
		t.Fatalf("Expected sh over max_load, got %+v", r)
	}
	want := map[string]Figure{
		"hz-a": {Node: "hz-a", Share: 0.5, NewShare: 0, Load: 0.5, Projected: 0, Drained: true},
		"sh":   {Node: "sh", Share: 0, NewShare: 0.5, Load: 0.5, Projected: 0.9, Over: true},
		"bj":   {Node: "bj", Share: 0.5, NewShare: 0.5, Load: 0.3, Projected: 0.3},
	}
	for _, f := range r.Nodes {
		if f != want[f.Node] {
			t.Errorf("%s: got %+v, want %+v", f.Node, f, want[f.Node])
		}
	}
	// With sh lighter the same move fits.
	loads["sh"] = 0.05
	if r := Estimate(samples, decide, loads, map[string]bool{"hz-a": true}, 0.8); !r.Ready {
		t.Errorf("Expected ready, got %+v", r)
	}
	// No recent decisions: nothing is known to move.
	if r := Estimate(nil, decide, loads, nil, 0.8); !r.Ready || r.Samples != 0 {
		t.Errorf("Expected ready without samples, got %+v", r)
	}
}

// TestSampler: about one decision in SampleEvery is kept, at most
// SampleSize, the oldest overwritten; Recent leaves out the old ones.
func TestSampler(t *testing.T) {
	var s Sampler
	now := time.Now()
	kept := 0
	for i := range 4 * SampleSize * SampleEvery {
		slot, ok := s.Take()
		if !ok {
			continue
		}
		kept++
		at := now
		if i < SampleSize*SampleEvery {
			at = now.Add(-time.Hour)
		}
		s.Keep(slot, &Sample{Node: "n", At: at})
	}
	// 4 × 2,048 expected; 8,192 ± 5% is over 5 standard deviations.
	if kept < 4*SampleSize*95/100 || kept > 4*SampleSize*105/100 {
		t.Errorf("Expected about %d kept, got %d", 4*SampleSize, kept)
	}
	if got := len(s.Recent(now.Add(-time.Minute))); got != SampleSize {
		t.Errorf("Expected %d recent samples, got %d", SampleSize, got)
	}
}
