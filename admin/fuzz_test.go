package admin

import (
	"bytes"
	"testing"
)

// FuzzStateFile: whatever a state file holds, it loads or fails with an
// error, never a panic; what loads is written in a form that loads back
// to the same state.
func FuzzStateFile(f *testing.F) {
	for _, s := range []string{
		"drains:\n  - node: a\n    since: 2026-01-01T00:00:00Z\npins:\n  - cidr: 1.2.3.0/24\n    nodes: [b]\n    note: |4-\n         ticket 4711\n        moved by oncall\n",
		"# edited by hand\n{\n  \"drains\": [\n    {\"node\":\"a\",\"since\":\"2026-11-30T12:00:00Z\"}\n  ],\n  \"pins\": [\n    {\"cidr\":\"58.208.0.0/16\",\"nodes\":[\"b\"],\"note\":\" ticket 4711\\nmoved by oncall\\u0000\\u0085\"}\n  ],\n  \"canary\": {\"identity\":\"ab\",\"file\":\"c.yaml\",\"percent\":5}\n}\n",
		"pins:\n  - {cidr: 2001:db8::/48, location: {country: CN, province: SH, city: \"# x\", lat: 31.2, lon: 121.5}, expires: 2026-12-31T00:00:00Z}\n",
		"canary: {identity: x, file: f, percent: 100, rolled_back: true, reason: \"a: b\"}\n",
		"pins: [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		s, _, err := parseState(data, known)
		if err != nil {
			return
		}
		out, err := s.Marshal()
		if err != nil {
			return // drains or a canary the file cannot store exactly: refused
		}
		back, _, err := parseState(out, known)
		if err != nil {
			t.Fatalf("a loaded state wrote a file that does not load: %v\n%s", err, out)
		}
		again, err := back.Marshal()
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("a loaded state did not read back as written (%v):\n%s\n%s", err, out, again)
		}
	})
}
