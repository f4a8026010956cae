package quality

import (
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
)

const sample = `quality:
  - from: {province: ZJ, isp: telecom}
    node: hz-telecom
    rtt_ms: 12.5
    loss: 0.001
    measured: 2026-11-30T10:00:00Z
  - from: {isp: 电信}
    node: sh-telecom
    rtt_ms: 30
    loss: 0
    measured: 2026-11-30T10:02:00Z
  - from: {province: 浙江}
    node: gone
    rtt_ms: 1
    loss: 0
    measured: 2026-11-30T10:00:00Z
`

func TestParseAndLinks(t *testing.T) {
	m, err := Parse("q.yaml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Rows[1]; r.ISP != "telecom" || r.Province != "" {
		t.Errorf("Row 1: %+v, want every province's telecom", r)
	}
	index := func(id string) (int, bool) {
		switch id {
		case "hz-telecom":
			return 0, true
		case "sh-telecom":
			return 1, true
		}
		return 0, false
	}
	now := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	links, fresh, stale, next := m.Links(index, now, 10*time.Minute)
	if fresh != 2 || stale != 0 || !next.Equal(time.Date(2026, 11, 30, 10, 10, 0, 0, time.UTC)) {
		t.Errorf("fresh %d stale %d next %v; want 2, 0 and 10:10 (the unknown node's row is left out)", fresh, stale, next)
	}
	if l, ok := links.Link("ZJ", "telecom", 0); !ok || l.RTTMs != 12.5 {
		t.Errorf("ZJ telecom to node 0: %+v %v", l, ok)
	}
	if l, ok := links.Link("JS", "telecom", 1); !ok || l.RTTMs != 30 {
		t.Errorf("The carrier-wide row: %+v %v", l, ok)
	}
	if _, ok := links.Link("ZJ", "unicom", 0); ok {
		t.Errorf("A unicom client got telecom's row")
	}
	links, fresh, stale, _ = m.Links(index, now.Add(time.Hour), 10*time.Minute)
	if fresh != 0 || stale != 3 || links.Len() != 0 {
		t.Errorf("An hour later %d rows are fresh, want none", fresh)
	}
}

func TestParseErrors(t *testing.T) {
	row := "  - {from: {province: ZJ}, node: a, rtt_ms: 1, loss: 0, measured: 2026-11-30T10:00:00Z}\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "quality:\n  - {from: {province: ZJ}, node: a, rtt: 1}\n", `line 2: quality[0]: unknown key "rtt"`},
		{"no from", "quality:\n  - {node: a, rtt_ms: 1, loss: 0, measured: 2026-11-30T10:00:00Z}\n", "field from"},
		{"bad province", "quality:\n  - {from: {province: Atlantis}, node: a, rtt_ms: 1, loss: 0, measured: 2026-11-30T10:00:00Z}\n", "field from.province"},
		{"no rtt", "quality:\n  - {from: {isp: telecom}, node: a, loss: 0, measured: 2026-11-30T10:00:00Z}\n", "field rtt_ms"},
		{"loss above 1", "quality:\n  - {from: {isp: telecom}, node: a, rtt_ms: 1, loss: 2, measured: 2026-11-30T10:00:00Z}\n", "field loss"},
		{"bad time", "quality:\n  - {from: {isp: telecom}, node: a, rtt_ms: 1, loss: 0, measured: yesterday}\n", "line 2"},
		{"duplicate", "quality:\n" + row + row, "line 3: quality[1]: a second row"},
	}
	for _, tc := range tests {
		_, err := Parse("q.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "q.yaml") {
			t.Errorf("%s: got %v, want an error naming q.yaml and containing %q", tc.name, err, tc.want)
		}
	}
}

// TestParseRejectsAliases: the alias bomb is refused at its line, without
// expanding it.
func TestParseRejectsAliases(t *testing.T) {
	_, err := Parse("q.yaml", []byte("quality:\n  - node: &k bogus\n"+testsupport.AliasBomb("    ")))
	if err == nil || !strings.Contains(err.Error(), "quality q.yaml: line 3: an alias (*k) is not allowed") {
		t.Fatalf("Expected the alias refused at line 3, got %v", err)
	}
}
