package test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"
)

// gslb replay -feed judges a table change by the TTFB the feed's cells
// expect of its decisions: the baseline sends every Zhejiang telecom
// client to a node the cells measure at 100 ms, the table under test
// spreads them over it and two at 20 ms.
func TestReplayFeedTTFB(t *testing.T) {
	conf, snap, baseline, input := replayFeedFiles(t, "")

	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", "-feed", snap, "-baseline-nodes", baseline, input)
	var got struct {
		TTFB struct {
			P50  float64 `json:"p50_ms"`
			With int     `json:"queries_with_cell"`
		} `json:"ttfb"`
		Nodes    map[string]int `json:"nodes"`
		Baseline struct {
			TTFB struct {
				P50  float64 `json:"p50_ms"`
				With int     `json:"queries_with_cell"`
			} `json:"ttfb"`
		} `json:"baseline"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if got.TTFB.With != 300 || got.Baseline.TTFB.With != 300 {
		t.Fatalf("Queries with a cell: %d, baseline %d, want 300 each:\n%s", got.TTFB.With, got.Baseline.TTFB.With, out)
	}
	if b := got.Baseline.TTFB.P50; b < 90 || b > 110 {
		t.Errorf("Baseline TTFB p50 %.1f ms, want hz-1's 100 ms", b)
	}
	if c := got.TTFB.P50; c >= got.Baseline.TTFB.P50 || c < 18 {
		t.Errorf("TTFB p50 %.1f ms over nodes %v, want below the baseline's %.1f ms", c, got.Nodes, got.Baseline.TTFB.P50)
	}

	text, _, code := runTool(t, "replay", "-conf", conf, "-feed", snap, "-baseline-nodes", baseline, input)
	if code != 0 || !strings.Contains(text, "Expected TTFB         p50 ") || !strings.Contains(text, "(300 of 300 queries with a feed cell)") || !strings.Contains(text, "Baseline TTFB         p50 ") {
		t.Errorf("replay's text has no expected TTFB lines:\n%s", text)
	}
	os.WriteFile(snap, []byte(`{"cells": [{"node": "hz-1", "ttfb_p50_ms": 50, "ttfb_p95_ms": 10}]}`), 0o644)
	if _, stderr, code := runTool(t, "replay", "-conf", conf, "-feed", snap, input); code != 1 || !strings.Contains(stderr, "cells[0]: a node and TTFBs") {
		t.Errorf("A bad snapshot: exit %d, %s", code, stderr)
	}
}

// replayFeedFiles writes feedNodes' Corefile, a feed snapshot (hz-1 at
// 100 ms for Zhejiang telecom, hz-2 and hz-3 at 20 ms), a baseline table
// of hz-1 and bj only, and 300 Zhejiang telecom /24s; extra goes in the
// gslb block.
func replayFeedFiles(t *testing.T, extra string) (conf, snap, baseline, input string) {
	t.Helper()
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
	}, []mmdbgen.ASN{{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"}})
	nodes := writeFile(t, dir, "nodes.yaml", feedNodes)
	baseline = writeFile(t, dir, "baseline.yaml", strings.Replace(feedNodes, "  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n  - {id: hz-3, ipv4: [192.0.2.3], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n", "", 1))
	conf = writeFile(t, dir, "Corefile", corefile(city, asn, nodes, extra))
	snap = writeFile(t, dir, "feed.json", `{"at": "2026-12-02T03:00:00Z", "count": {"fresh": 3, "thin": 0, "stale": 0}, "cells": [
  {"province": "ZJ", "isp": "telecom", "node": "hz-1", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 100, "ttfb_p95_ms": 300, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "ZJ", "isp": "telecom", "node": "hz-2", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 20, "ttfb_p95_ms": 60, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "", "isp": "telecom", "node": "hz-3", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 20, "ttfb_p95_ms": 60, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "ZJ", "isp": "telecom", "node": "bj", "state": "stale", "samples": 5000, "ttfb_p50_ms": 1, "ttfb_p95_ms": 2, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T02:00:00Z", "source": "hz"}
]}`)
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, "1.%d.%d.0/24\n", i/256, i%256)
	}
	input = writeFile(t, dir, "clients.txt", in.String())
	return conf, snap, baseline, input
}

// gslb replay -feed decides with the snapshot's cells, as the server does
// with its own: the node they measure at 100 ms loses its Zhejiang
// telecom clients to the two at 20 ms.
func TestReplayFeedDecides(t *testing.T) {
	conf, snap, _, input := replayFeedFiles(t, "weights 0.4 0.2 0.1 0.3")
	nodes := func(args ...string) map[string]int {
		out, stderr, code := runTool(t, append([]string{"replay", "-conf", conf, "-json"}, append(args, input)...)...)
		var got struct {
			Nodes map[string]int `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("replay %v: exit %d, %v: %s\n%s", args, code, err, stderr, out)
		}
		return got.Nodes
	}
	if n := nodes(); n["hz-1"] == 0 {
		t.Fatalf("Without the cells no /24 goes to hz-1 (%v): the test shows nothing", n)
	}
	if n := nodes("-feed", snap); n["hz-1"] != 0 || n["hz-2"]+n["hz-3"] != 300 {
		t.Errorf("With the cells: %v, want all 300 /24s on hz-2 and hz-3", n)
	}
}
