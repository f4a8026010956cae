package feed

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/table"
)

const feedTable = `nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: bj-1, ipv4: [192.0.2.2], country: CN, province: BJ, isp: telecom, lat: 39.9, lon: 116.4}
records:
  - name: www.example.org
`

// testFeed is a feed over feedTable with one source, hz, for hz-*; it
// places 1.0.0.0/8 in Zhejiang telecom and nothing else.
func testFeed(t *testing.T) *Feed {
	t.Helper()
	tb, err := table.Parse("nodes.yaml", []byte(feedTable), []string{"example.org."}, 60)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.MinSamples = 1
	cfg.Sources = []Source{{Name: "hz", Token: "hz-token-0123456789abcdef", Nodes: []string{"hz-*"}, Rate: 1000}}
	place := func(_ context.Context, p netip.Prefix) (string, string) {
		if p.Addr().As4()[0] == 1 {
			return "ZJ", "telecom"
		}
		return "", ""
	}
	f := New(cfg, place, 0.2, func() time.Time { return testNow })
	f.SetTable(tb)
	return f
}

func post(t *testing.T, f *Feed, token, body string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(f)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func TestServeHTTP(t *testing.T) {
	f := testFeed(t)
	const tok = "hz-token-0123456789abcdef"
	client := func(c string) string {
		return strings.Replace(rowAt("hz-1", testNow, ""), `"province":"ZJ","isp":"telecom"`, `"client":"`+c+`"`, 1)
	}
	for _, tc := range []struct {
		name, token, body string
		code              int
		want              string
	}{
		{"no token", "", rowAt("hz-1", testNow, ""), 401, "a feed source's bearer token is required"},
		{"another token", "nope", rowAt("hz-1", testNow, ""), 401, "bearer token"},
		{"placed and not", tok, client("1.2.3.0/24") + "\n" + client("9.9.9.9"), 200, `"unplaced": 1`},
		{"foreign", tok, rowAt("bj-1", testNow, ""), 403, `row 0: field node: source hz may not report on \"bj-1\"`},
		{"bad", tok, rowAt("hz-1", testNow, `,"bytes":-1`), 400, "row 0: field bytes"},
	} {
		code, out := post(t, f, tc.token, tc.body)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, out, tc.code, tc.want)
		}
	}
	c := f.Cycle(testNow)
	if len(c.Cells) != 1 || c.Cells[0].Key != (Key{"ZJ", "telecom", "hz-1"}) || c.Cells[0].Samples != 1000 {
		t.Errorf("Cells %+v, want the one placed row", c.Cells)
	}
}

// A batch shared on the stream folds into another member's cells as it
// did into the first's; an entry out of bounds is refused.
func TestStreamRoundTrip(t *testing.T) {
	a, b := testFeed(t), testFeed(t)
	var shared [][]byte
	a.Share = func(rows []Placed) {
		data, err := EncodePlaced(rows)
		if err != nil {
			t.Fatal(err)
		}
		shared = append(shared, data)
	}
	src := &a.cfg.Sources[0]
	body := rowAt("hz-1", testNow, "") + "\n" + strings.Replace(rowAt("hz-1", testNow, ""), `"province":"ZJ"`, `"province":"SH"`, 1)
	if res, err := a.Ingest(context.Background(), src, []byte(body)); err != nil || res.Accepted != 2 || len(shared) != 1 {
		t.Fatalf("Ingest: %+v %v, %d shared", res, err, len(shared))
	}
	if err := b.AddEncoded(shared[0]); err != nil {
		t.Fatal(err)
	}
	ca, cb := a.Cycle(testNow), b.Cycle(testNow)
	if len(ca.Cells) != 2 || len(cb.Cells) != 2 {
		t.Fatalf("Cells %+v and %+v", ca.Cells, cb.Cells)
	}
	for i := range ca.Cells {
		x, y := ca.Cells[i], cb.Cells[i]
		if x.Key != y.Key || x.Samples != y.Samples || x.P50 != y.P50 || x.P95 != y.P95 || x.ErrorRatio != y.ErrorRatio || x.HitRatio != y.HitRatio {
			t.Errorf("Cell %d: %+v here, %+v from the stream", i, x, y)
		}
	}
	for _, bad := range []string{`[{"node":"hz-1","requests":-1}]`, `[{"node":"hz-1","requests":5,"errors":6}]`, `[{"node":"hz-1","requests":5,"hist":[[999,1]]}]`, `{`} {
		if err := b.AddEncoded([]byte(bad)); err == nil {
			t.Errorf("AddEncoded(%s): no error", bad)
		}
	}
}

// Stream entries fold once each, in order, the feed's own skipped; one
// read back on a start decays by its age and keeps it as the cell's.
func TestStreamEntries(t *testing.T) {
	a, b := testFeed(t), testFeed(t)
	if from := b.StreamFrom(); from != fmt.Sprintf("%d-0", testNow.Add(-b.cfg.MaxAge).UnixMilli()) {
		t.Errorf("A new feed reads the stream after %s, want max_age ago", from)
	}
	entry := `[{"node":"hz-1","province":"ZJ","isp":"telecom","source":"hz","requests":1000,"hist":[[30,1000]]}]`
	at := testNow.Add(-time.Minute) // one half-life ago
	id := fmt.Sprintf("%d-0", at.UnixMilli())
	for _, e := range []struct{ id, run string }{{id, a.Run()}, {id, a.Run()}, {fmt.Sprintf("%d-0", at.UnixMilli()-1), a.Run()}, {fmt.Sprintf("%d-1", at.UnixMilli()), b.Run()}} {
		if err := b.AddEntry(e.id, e.run, []byte(entry)); err != nil {
			t.Fatal(err)
		}
	}
	if from := b.StreamFrom(); from != fmt.Sprintf("%d-1", at.UnixMilli()) {
		t.Errorf("StreamFrom after the entries: %s", from)
	}
	c := b.Cycle(testNow)
	if len(c.Cells) != 1 || c.Cells[0].Samples != 500 || !c.Cells[0].Updated.Equal(at) {
		t.Fatalf("Cells %+v, want one of 500 samples (1000 a half-life ago), updated then", c.Cells)
	}
	if err := b.AddEntry("x", "", []byte(entry)); err == nil {
		t.Error("AddEntry of a bad ID: no error")
	}
}

// Feeds opened on one identity share their fold, cells and windows, the
// last opened tuning it; Retune takes it back, and the last Close drops it.
func TestOpenShares(t *testing.T) {
	cfg := DefaultConfig()
	a := Open("example.org. 127.0.0.1:1", cfg, nil, 0.2)
	cfg.MinSamples = 7
	b := Open("example.org. 127.0.0.1:1", cfg, nil, 0.2)
	other := Open("example.org. 127.0.0.1:2", cfg, nil, 0.2)
	defer other.Close()
	if a.state != b.state || a.state == other.state {
		t.Fatal("Feeds of one identity do not share their state, or of two do")
	}
	if a.fold.cfg.MinSamples != 7 {
		t.Errorf("The fold's min_samples is %g, want the last opened's 7", a.fold.cfg.MinSamples)
	}
	a.Retune()
	if a.fold.cfg.MinSamples != DefaultMinSamples {
		t.Errorf("After Retune min_samples is %g, want a's %d", a.fold.cfg.MinSamples, DefaultMinSamples)
	}
	a.Close()
	b.Close()
	if c := Open("example.org. 127.0.0.1:1", cfg, nil, 0.2); c.state == b.state {
		t.Error("A feed opened after the last Close shares the dropped state")
	} else {
		c.Close()
	}
}
