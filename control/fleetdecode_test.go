package control

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gslbdns/gslb/fleet"
)

// TestFromFleetSkipsBadEntries: the fleet's entries that do not hold for
// their kind or this node table are left out; the others apply.
func TestFromFleetSkipsBadEntries(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	c := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, ""))
	e := func(v string) fleet.Entry {
		return fleet.Entry{Value: json.RawMessage(v), Origin: fleet.Origin{Member: "m"}}
	}
	s := &fleet.State{Entries: map[string]fleet.Entry{
		"drain/hz-a":     e(`{"node":"hz-a","since":"2026-12-01T00:00:00Z"}`),
		"drain/hz-b":     e(`{"node":`),
		"drain/nope":     e(`{"node":"nope","since":"2026-12-01T00:00:00Z"}`),
		"pin/1.2.3.0/24": e(`{"cidr":"1.2.3.0/24","nodes":["bj","gone"]}`),
		"pin/1.2.4.0/24": e(`{"cidr":"1.2.4.0/24","nodes":["gone"]}`),
		"canary":         e(`{"identity":"x","percent":500}`),
		"other":          e(`1`),
		"drain/sh":       {Origin: fleet.Origin{Member: "m"}}, // a deletion
	}}
	st := c.fromFleet(s)
	if len(st.Drains) != 1 || st.Drains[0].Node != "hz-a" {
		t.Errorf("Expected hz-a's drain alone, got %+v", st.Drains)
	}
	if len(st.Pins) != 1 || st.Pins[0].CIDR != "1.2.3.0/24" || len(st.Pins[0].Nodes) != 1 {
		t.Errorf("Expected the pin of 1.2.3.0/24 to bj alone, got %+v", st.Pins)
	}
	if st.Canary != nil {
		t.Errorf("Expected the bad canary entry left out, got %+v", st.Canary)
	}
	back := sharedEntries(st)
	if len(back) != 2 || back["drain/hz-a"] == nil || back["pin/1.2.3.0/24"] == nil {
		t.Errorf("Expected the two entries that hold shared back, got %v", back)
	}
}
