package test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// feedNodes: three equal Zhejiang telecom nodes and one in Beijing.
const feedNodes = `nodes:
  - {id: hz-1, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-3, ipv4: [192.0.2.3], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: bj, ipv4: [192.0.2.4], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.41}
records:
  - name: www.example.org
`

type feedEnv struct {
	*adminEnv
	hz, bj string // the sources' tokens
}

// startFeed serves feedNodes with a feed block of two sources: hz (the
// hz-* nodes) and bj (bj, 100 rows/s), and the extra lines in it.
func startFeed(t *testing.T, extra string) *feedEnv {
	t.Helper()
	e := &feedEnv{adminEnv: &adminEnv{dir: t.TempDir(), addr: testsupport.FreeAddr(t), token: "s3cret-token-for-tests"},
		hz: "hz-edge-token-5f1c9a7e3b2d4068", bj: "bj-edge-token-a83e6c1f0d9b2745"}
	city, asn := testsupport.WriteDBs(t, e.dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
		{Network: "2.0.0.0/8", Country: "CN", Province: "BJ", Lat: 39.9, Lon: 116.4, Radius: 50},
	}, []mmdbgen.ASN{
		{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"},
		{Network: "2.0.0.0/8", ASN: 4134, Org: "Chinanet"},
	})
	nodes := writeFile(t, e.dir, "nodes.yaml", feedNodes)
	tokens := map[string]string{}
	for name, tok := range map[string]string{"hz": e.hz, "bj": e.bj, "admin": e.token} {
		p := writeFile(t, e.dir, name+".token", tok+"\n")
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		tokens[name] = p
	}
	e.text = corefile(city, asn, nodes, fmt.Sprintf(`weights 0.4 0.2 0.1 0.3
        admin %s {
            token_file %s
        }
        feed {
            cycle 200ms
            min_samples 10
            max_rows 100
            max_body 64KiB
            source hz {
                token_file %s
                nodes hz-*
            }
            source bj {
                token_file %s
                nodes bj
                rate 100
            }
            %s
        }`, e.addr, tokens["admin"], tokens["hz"], tokens["bj"], extra))
	e.s = startServer(t, e.text)
	return e
}

// feedRow is a row of node's last minute for Zhejiang telecom clients
// (client "" ) or for the client network given.
func feedRow(node, client string, p50 float64, extra string) string {
	start := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	where := `"province":"ZJ","isp":"telecom"`
	if client != "" {
		where = fmt.Sprintf(`"client":%q`, client)
	}
	return fmt.Sprintf(`{"node":%q,"start":%q,"seconds":60,%s,"requests":1000,"errors":0,"hits":900,"ttfb_p50_ms":%g,"ttfb_p95_ms":%g%s}`,
		node, start, where, p50, 3*p50, extra)
}

// onNode counts the Zhejiang telecom /24s 1.0.x.0/24 answered with addr.
func (e *feedEnv) onNode(t *testing.T, addr string, subnets int) int {
	t.Helper()
	n := 0
	for i := range subnets {
		if e.answer(t, "www.example.org.", fmt.Sprintf("1.0.%d.0/24", i)) == addr {
			n++
		}
	}
	return n
}

// Rows posted to the admin listener move the answers within a cycle: a
// node the edges measure 80 ms slower for Zhejiang telecom loses those
// clients, and GET /v1/feed and explain show the cells.
func TestFeedMovesAnswers(t *testing.T) {
	e := startFeed(t, "")
	const subnets = 120
	if n := e.onNode(t, "192.0.2.1", subnets); n == 0 {
		t.Fatalf("No Zhejiang telecom /24 on hz-1 before the feed: the test shows nothing")
	}
	// One row per place, and one for a client network gslb places itself.
	body := feedRow("hz-1", "", 100, "") + "\n" + feedRow("hz-2", "", 20, "") + "\n" + feedRow("hz-3", "1.0.7.0/24", 20, "") + "\n"
	code, out := e.call(t, "POST", "/v1/feed", e.hz, body)
	if code != 200 || !strings.Contains(out, `"accepted": 3`) && !strings.Contains(out, `"accepted":3`) {
		t.Fatalf("POST /v1/feed: %d %s", code, out)
	}
	waitFor(t, "hz-1 to lose its Zhejiang telecom clients", func() (bool, string) {
		n := e.onNode(t, "192.0.2.1", subnets)
		return n == 0, fmt.Sprintf("%d /24s on hz-1", n)
	})
	code, out = e.call(t, "GET", "/v1/feed", e.token, "")
	var cells struct {
		Count map[string]int
		Cells []struct {
			Province, ISP, Node, State, Source string
			Samples                            float64
			P50                                float64 `json:"ttfb_p50_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &cells); code != 200 || err != nil {
		t.Fatalf("GET /v1/feed: %d %s %v", code, out, err)
	}
	if cells.Count["fresh"] != 3 || len(cells.Cells) != 3 {
		t.Fatalf("GET /v1/feed: %s, want three fresh cells", out)
	}
	for _, c := range cells.Cells {
		if c.Province != "ZJ" || c.ISP != "telecom" || c.Source != "hz" || c.Samples != 1000 || c.Node == "hz-1" && (c.P50 < 90 || c.P50 > 110) {
			t.Errorf("Cell %+v", c)
		}
	}
	code, out = e.call(t, "GET", "/v1/explain?addr=1.0.3.0/24&name=www.example.org", e.token, "")
	if code != 200 || !strings.Contains(out, `"feed": [`) || !strings.Contains(out, `"node": "hz-1"`) || !strings.Contains(out, `"ttfb_p50_ms"`) {
		t.Errorf("Explain without the cells: %d %s", code, out)
	}
	if v := gaugeValue(t, "coredns_gslb_feed_cells", "state", "fresh"); v != 3 {
		t.Errorf("coredns_gslb_feed_cells{state=\"fresh\"} = %v, want 3", v)
	}
	// 2000 requests with a p50 of 20 ms and 1000 with 100 ms: the
	// place's p50 is the fast rows' upper half, below the slow node's.
	if v := seriesValue(t, "coredns_gslb_feed_ttfb_seconds", map[string]string{"province": "ZJ", "isp": "telecom", "quantile": "0.5"}); v <= 0.020 || v >= 0.090 {
		t.Errorf("coredns_gslb_feed_ttfb_seconds{ZJ, telecom, 0.5} = %v, want in (0.020, 0.090)", v)
	}
}

// A Corefile reload keeps the cells: the new instance folds on from the
// same sums, decides as the old one did, and still knows the windows it
// took.
func TestFeedKeepsCellsOnReload(t *testing.T) {
	e := startFeed(t, "")
	const subnets = 60
	body := feedRow("hz-1", "", 100, "") + "\n" + feedRow("hz-2", "", 20, "") + "\n" + feedRow("hz-3", "", 20, "") + "\n"
	if code, out := e.call(t, "POST", "/v1/feed", e.hz, body); code != 200 {
		t.Fatalf("POST /v1/feed: %d %s", code, out)
	}
	waitFor(t, "hz-1 to lose its Zhejiang telecom clients", func() (bool, string) {
		n := e.onNode(t, "192.0.2.1", subnets)
		return n == 0, fmt.Sprintf("%d /24s on hz-1", n)
	})
	reloaded := time.Now()
	e.s.restart(t, e.text+"\n")
	var cells struct {
		At    time.Time
		Count map[string]int
	}
	// The new instance's own folds, not the old one's last.
	waitFor(t, "two folds of the reloaded instance", func() (bool, string) {
		code, out := e.call(t, "GET", "/v1/feed", e.token, "")
		if err := json.Unmarshal([]byte(out), &cells); code != 200 || err != nil {
			return false, fmt.Sprintf("GET /v1/feed: %d %s", code, out)
		}
		return cells.At.After(reloaded.Add(500 * time.Millisecond)), out
	})
	if cells.Count["fresh"] != 3 {
		t.Fatalf("After the reload: %v cells, want three fresh ones", cells.Count)
	}
	if n := e.onNode(t, "192.0.2.1", subnets); n != 0 {
		t.Errorf("After the reload %d Zhejiang telecom /24s are back on hz-1", n)
	}
	code, out := e.call(t, "POST", "/v1/feed", e.hz, body)
	if code != 200 || !strings.Contains(out, `"replayed": 3`) {
		t.Errorf("The batch again after the reload: %d %s, want it ignored as replayed", code, out)
	}
}

// Every bound of POST /v1/feed: a foreign node (403, nothing stored), an
// oversized body (413 before it is parsed), bad values (400 naming the row
// and the field), a flood (429, the other source unaffected), a replayed
// batch (ignored and counted), and tokens.
func TestFeedAdversarial(t *testing.T) {
	e := startFeed(t, "")
	rows := func(source, result string) float64 {
		return seriesValue(t, "coredns_gslb_feed_rows_total", map[string]string{"source": source, "result": result})
	}

	foreign := rows("hz", "foreign")
	code, out := e.call(t, "POST", "/v1/feed", e.hz, feedRow("hz-2", "", 20, "")+"\n"+feedRow("bj", "", 500, "")+"\n")
	if code != 403 || !strings.Contains(out, `row 1: field node: source hz may not report on \"bj\"`) {
		t.Errorf("A foreign row: %d %s, want 403 naming row 1", code, out)
	}
	if rows("hz", "foreign")-foreign != 2 {
		t.Errorf("feed_rows_total{result=\"foreign\"} grew by %v, want 2 (the batch)", rows("hz", "foreign")-foreign)
	}

	tooLarge := rows("hz", "too_large")
	big := "[" + strings.Repeat(" ", 70<<10) + "not json at all"
	code, out = e.call(t, "POST", "/v1/feed", e.hz, big)
	if code != 413 || !strings.Contains(out, "over the limit of 65536") {
		t.Errorf("A 70KiB body: %d %s, want 413 before parsing", code, out)
	}
	if rows("hz", "too_large")-tooLarge != 1 {
		t.Errorf("feed_rows_total{result=\"too_large\"} did not count the body")
	}
	code, out = e.call(t, "POST", "/v1/feed", e.hz, strings.Repeat(feedRow("hz-2", "", 20, "")+"\n", 101))
	if code != 413 || !strings.Contains(out, "more than 100 in one request") {
		t.Errorf("101 rows: %d %s, want 413", code, out)
	}

	for _, tc := range []struct{ row, want string }{
		{`{"node":"hz-2","requests":"NaN"}`, "row 1: field requests: want a number, got a JSON string"},
		{strings.Replace(feedRow("hz-2", "", 20, ""), `"requests":1000`, `"requests":-5`, 1), "row 1: field requests: -5 is not a count"},
		{strings.Replace(feedRow("hz-2", "", 20, ""), `"requests":1000`, `"requests":1e308`, 1), "row 1: field requests: 1e+308 is not a count"},
		{feedRow("hz-2", "", 20, `,"bytes":1e308`), "row 1: field bytes: 1e+308 is not a count"},
		{feedRow("hz-9", "", 20, ""), `row 1: field node: \"hz-9\" is not in the node table`},
	} {
		code, out := e.call(t, "POST", "/v1/feed", e.hz, feedRow("hz-3", "", 20, "")+"\n"+tc.row+"\n")
		if code != 400 || !strings.Contains(out, tc.want) {
			t.Errorf("Row %s: %d %s, want 400 with %q", tc.row, code, out, tc.want)
		}
	}

	// A flood from bj (100 rows/s) is refused; hz goes on.
	batch := func(node string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(feedRow(node, fmt.Sprintf("2.0.%d.0/24", i), 30, ""))
			b.WriteByte('\n')
		}
		return b.String()
	}
	limited := rows("bj", "rate_limited")
	code, out = e.call(t, "POST", "/v1/feed", e.bj, batch("bj", 100))
	if code != 200 {
		t.Fatalf("bj's first 100 rows: %d %s", code, out)
	}
	code, out = e.call(t, "POST", "/v1/feed", e.bj, batch("bj", 100))
	if code != 429 || rows("bj", "rate_limited")-limited != 100 {
		t.Errorf("bj's next 100 rows at once: %d %s, want 429 and 100 rows counted", code, out)
	}
	code, out = e.call(t, "POST", "/v1/feed", e.hz, feedRow("hz-3", "", 20, "")+"\n")
	if code != 200 {
		t.Errorf("hz during bj's flood: %d %s, want 200", code, out)
	}

	// The same batch again: ignored and counted.
	replayed := rows("hz", "replayed")
	again := feedRow("hz-1", "", 25, "") + "\n" + feedRow("hz-2", "1.0.9.0/24", 25, "") + "\n"
	if code, out = e.call(t, "POST", "/v1/feed", e.hz, again); code != 200 || !strings.Contains(out, `"replayed": 0`) {
		t.Fatalf("A batch: %d %s", code, out)
	}
	if code, out = e.call(t, "POST", "/v1/feed", e.hz, again); code != 200 || !strings.Contains(out, `"accepted": 0`) || !strings.Contains(out, `"replayed": 2`) {
		t.Errorf("The batch again: %d %s, want 2 replayed", code, out)
	}
	if rows("hz", "replayed")-replayed != 2 {
		t.Errorf("feed_rows_total{result=\"replayed\"} grew by %v, want 2", rows("hz", "replayed")-replayed)
	}

	for name, tok := range map[string]string{"no token": "", "the admin token": e.token, "a wrong token": "nope-nope-nope-nope"} {
		if code, out := e.call(t, "POST", "/v1/feed", tok, feedRow("hz-2", "", 20, "")); code != 401 {
			t.Errorf("POST with %s: %d %s, want 401", name, code, out)
		}
	}
	if code, _ := e.call(t, "GET", "/v1/feed", e.hz, ""); code != 401 {
		t.Errorf("GET /v1/feed with a source's token: %d, want 401 (it takes the admin token)", code)
	}

	// Nothing of the refused batches was stored: no cell of bj from hz,
	// no cell with the bad rows' values.
	waitFor(t, "a fold", func() (bool, string) {
		_, out := e.call(t, "GET", "/v1/feed", e.token, "")
		return strings.Contains(out, `"node": "hz-1"`), out
	})
	_, out = e.call(t, "GET", "/v1/feed", e.token, "")
	var cells struct {
		Cells []struct {
			Node, Source string
			P50          float64 `json:"ttfb_p50_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &cells); err != nil {
		t.Fatal(err)
	}
	for _, c := range cells.Cells {
		if c.Node == "bj" && c.Source != "bj" || c.Node == "bj" && c.P50 > 100 {
			t.Errorf("A refused row was stored: %+v", c)
		}
	}
}
