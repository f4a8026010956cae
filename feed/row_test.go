package feed

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func known(id string) bool { return strings.HasPrefix(id, "hz-") || strings.HasPrefix(id, "bj-") }

// rowAt is a valid row of node for the minute before now.
func rowAt(node string, now time.Time, extra string) string {
	return fmt.Sprintf(`{"node":%q,"start":%q,"seconds":60,"province":"ZJ","isp":"telecom","requests":1000,"errors":5,"hits":900,"ttfb_p50_ms":20,"ttfb_p95_ms":80%s}`,
		node, now.Add(-time.Minute).Format(time.RFC3339), extra)
}

func TestDecodeArrayAndLines(t *testing.T) {
	one, two := rowAt("hz-1", testNow, ""), rowAt("hz-2", testNow, "")
	for name, body := range map[string]string{
		"array":  "[" + one + ",\n" + two + "]",
		"ndjson": one + "\n" + two + "\n",
		"spaced": "\n\n  " + one + "\r\n" + two,
	} {
		rows, err := Decode([]byte(body), 10)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rows) != 2 || rows[0].Node != "hz-1" || rows[1].Node != "hz-2" {
			t.Errorf("%s: rows %+v", name, rows)
		}
	}
}

func TestDecodeBounds(t *testing.T) {
	body := strings.Repeat(rowAt("hz-1", testNow, "")+"\n", 11)
	if _, err := Decode([]byte(body), 10); !errors.Is(err, ErrTooManyRows) {
		t.Errorf("NDJSON of 11 rows, limit 10: %v", err)
	}
	arr := "[" + strings.TrimSuffix(strings.ReplaceAll(body, "\n", ","), ",") + "]"
	if _, err := Decode([]byte(arr), 10); !errors.Is(err, ErrTooManyRows) {
		t.Errorf("Array of 11 rows, limit 10: %v", err)
	}
	for _, tc := range []struct{ body, want string }{
		{rowAt("hz-1", testNow, "") + "\n" + `{"node":"hz-2","requets":5}`, `row 1: field requets: unknown field (did you mean requests?)`},
		{`{"node":"hz-1","requests":"NaN"}`, `row 0: field requests: want a number, got a JSON string`},
		{`[` + rowAt("hz-1", testNow, "") + `,{"node":`, `row 1:`},
		{`[` + rowAt("hz-1", testNow, "") + `] []`, `more after the JSON array`},
		{`{"node":"hz-1","requests":1e999}`, `row 0:`},
	} {
		_, err := Decode([]byte(tc.body), 10)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%.60q): %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestCheckNamesRowAndField(t *testing.T) {
	start := testNow.Add(-time.Minute).Format(time.RFC3339)
	base := `"node":"hz-1","start":"` + start + `","seconds":60,"province":"ZJ","isp":"telecom"`
	for _, tc := range []struct{ row, want string }{
		{`{` + base + `,"requests":-1}`, "row 3: field requests: -1 is not a count"},
		{`{` + base + `,"requests":1e308}`, "row 3: field requests: 1e+308 is not a count"},
		{`{` + base + `}`, "row 3: field requests: missing"},
		{`{` + base + `,"requests":10,"errors":11}`, "row 3: field errors: 11 errors of 10 requests"},
		{`{` + base + `,"requests":10,"hits":-2}`, "row 3: field hits"},
		{`{` + base + `,"requests":10,"ttfb_p50_ms":-5,"ttfb_p95_ms":9}`, "row 3: field ttfb_p50_ms: -5 is not a TTFB"},
		{`{` + base + `,"requests":10,"ttfb_p50_ms":50,"ttfb_p95_ms":9}`, "row 3: field ttfb_p95_ms: 9 is not a TTFB in ttfb_p50_ms"},
		{`{` + base + `,"requests":10,"ttfb_p50_ms":50}`, "row 3: field ttfb_p50_ms: give both"},
		{`{` + base + `,"requests":10,"ttfb_hist":[[10,4],[1e308,2]]}`, "row 3: field ttfb_hist[1]: 1e+308 is not a TTFB"},
		{`{` + base + `,"requests":10,"ttfb_hist":[[10,40]]}`, "row 3: field ttfb_hist: holds 40 requests, the row 10"},
		{`{"node":"xx-1","start":"` + start + `","seconds":60,"isp":"telecom","requests":1}`, `row 3: field node: "xx-1" is not in the node table`},
		{`{"start":"` + start + `","seconds":60,"isp":"telecom","requests":1}`, `row 3: field node: missing`},
		{`{"node":"hz-1","start":"yesterday","seconds":60,"isp":"telecom","requests":1}`, `row 3: field start: "yesterday" is not an RFC 3339 time`},
		{`{"node":"hz-1","start":"` + testNow.Add(time.Hour).Format(time.RFC3339) + `","seconds":60,"isp":"telecom","requests":1}`, `row 3: field start: the window ends at 2026-12-02T04:01:00Z, in the future`},
		{`{"node":"hz-1","start":"` + testNow.Add(-time.Hour).Format(time.RFC3339) + `","seconds":60,"isp":"telecom","requests":1}`, `row 3: field start: the window ended at 2026-12-02T02:01:00Z, more than the max age 10m0s ago`},
		{`{"node":"hz-1","start":"` + start + `","seconds":0,"isp":"telecom","requests":1}`, `row 3: field seconds`},
		{`{"node":"hz-1","start":"` + start + `","seconds":60,"requests":1}`, `row 3: field client: missing`},
		{`{"node":"hz-1","start":"` + start + `","seconds":60,"province":"Atlantis","requests":1}`, `row 3: field province`},
		{`{"node":"hz-1","start":"` + start + `","seconds":60,"client":"1.2.3.0/24","isp":"telecom","requests":1}`, `row 3: field client: give a client network or`},
		{`{"node":"hz-1","start":"` + start + `","seconds":60,"client":"1.2.3","requests":1}`, `row 3: field client: "1.2.3" is not a network`},
	} {
		rows, err := Decode([]byte(tc.row), 1)
		if err != nil {
			t.Fatalf("Decode(%s): %v", tc.row, err)
		}
		_, err = rows[0].Check(3, known, testNow, 10*time.Minute)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%s): %v, want %q", tc.row, err, tc.want)
		}
	}
}

func TestCheckReadsRow(t *testing.T) {
	rows, err := Decode([]byte(rowAt("hz-1", testNow, `,"bytes":5000`)), 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rows[0].Check(0, known, testNow, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Province != "ZJ" || r.ISP != "telecom" || r.Requests != 1000 || r.Errors != 5 || !r.HasHits || r.Hits != 900 || r.Bytes != 5000 {
		t.Errorf("Row %+v", r)
	}
	total := 0.0
	for _, b := range r.hist {
		total += b.n
	}
	if total != 995 {
		t.Errorf("Histogram holds %v requests, want the 995 answered without error", total)
	}
	for in, want := range map[string]string{"1.2.3.4": "1.2.3.0/24", "1.2.0.0/16": "1.2.0.0/16", "2001:db8:1:2::1": "2001:db8:1::/48", "::ffff:1.2.3.4": "1.2.3.0/24"} {
		p, err := ParseClient(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseClient(%s) = %v, %v; want %s", in, p, err, want)
		}
	}
}
