package table

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/scoring"
)

// A node's weight defaults to 1; a record's priority to normal and its
// MIN ttl to unset; [MAX, MIN] sets both.
func TestWeightPriorityTTLPair(t *testing.T) {
	y := "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1}\n" +
		"  - {id: b, ipv4: [192.0.2.2], country: CN, lat: 1, lon: 1, weight: 2.5}\n" +
		"records:\n  - name: www.example.org\n    ttl: [300, 20]\n    priority: high\n" +
		"  - name: img.example.org\n    ttl: 120\n    priority: low\n  - name: api.example.org\n"
	tb, err := parse([]byte(y), testZones, 60)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Nodes[0].Weight != 1 || tb.Nodes[1].Weight != 2.5 {
		t.Errorf("Weights %v, %v, want 1 and 2.5", tb.Nodes[0].Weight, tb.Nodes[1].Weight)
	}
	for name, want := range map[string]Record{
		"www.example.org.": {TTL: 300, MinTTL: 20, Priority: scoring.PriorityHigh},
		"img.example.org.": {TTL: 120, Priority: scoring.PriorityLow},
		"api.example.org.": {TTL: 60, Priority: scoring.PriorityNormal},
	} {
		r := tb.Records[name]
		if r.TTL != want.TTL || r.MinTTL != want.MinTTL || r.Priority != want.Priority {
			t.Errorf("%s: ttl %d/%d priority %s, want %d/%d %s", name, r.TTL, r.MinTTL, r.Priority, want.TTL, want.MinTTL, want.Priority)
		}
	}
}

func TestWeightPriorityTTLPairErrors(t *testing.T) {
	node := "  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1}\n"
	rec := "records:\n  - name: www.example.org\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"zero weight", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, weight: 0}\n" + rec, "line 2: nodes[0] (id a): field weight: 0 must be > 0"},
		{"negative weight", "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1, weight: -1}\n" + rec, "field weight"},
		{"bad priority", "nodes:\n" + node + rec + "    priority: urgent\n", `line 5: records[0] (name www.example.org.): field priority: "urgent" is not a priority`},
		{"min above max", "nodes:\n" + node + rec + "    ttl: [30, 60]\n", "field ttl: MIN 60 is not in 1..MAX 30"},
		{"zero min", "nodes:\n" + node + rec + "    ttl: [30, 0]\n", "field ttl: MIN 0"},
		{"three ttls", "nodes:\n" + node + rec + "    ttl: [30, 10, 5]\n", "line 5: field ttl: want seconds, or [MAX, MIN]"},
		{"zero max", "nodes:\n" + node + rec + "    ttl: [0, 0]\n", "field ttl: 0 is not in 1.."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml), testZones, 60)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A weight or a priority change is a change of the nodes or the records.
func TestDiffWeightPriority(t *testing.T) {
	base := "nodes:\n  - {id: a, ipv4: [192.0.2.1], country: CN, lat: 1, lon: 1%s}\nrecords:\n  - name: www.example.org\n%s"
	parse1 := func(w, p string) *Table {
		tb, err := parse([]byte(fmt.Sprintf(base, w, p)), testZones, 60)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	old := parse1("", "")
	if c := parse1(", weight: 2", "").Diff(old); c != ChangeNodes {
		t.Errorf("Weight: %s, want nodes", c)
	}
	if c := parse1("", "    priority: low\n").Diff(old); c != ChangeRecords {
		t.Errorf("Priority: %s, want records", c)
	}
	if c := parse1("", "    ttl: [60, 10]\n").Diff(old); c != ChangeRecords {
		t.Errorf("TTL pair: %s, want records", c)
	}
}
