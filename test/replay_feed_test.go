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
	dir := t.TempDir()
	city, asn := testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
	}, []mmdbgen.ASN{{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"}})
	nodes := writeFile(t, dir, "nodes.yaml", feedNodes)
	baseline := writeFile(t, dir, "baseline.yaml", strings.Replace(feedNodes, "  - {id: hz-2, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n  - {id: hz-3, ipv4: [192.0.2.3], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n", "", 1))
	conf := writeFile(t, dir, "Corefile", corefile(city, asn, nodes, ""))
	snap := writeFile(t, dir, "feed.json", `{"at": "2026-12-02T03:00:00Z", "count": {"fresh": 3, "thin": 0, "stale": 0}, "cells": [
  {"province": "ZJ", "isp": "telecom", "node": "hz-1", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 100, "ttfb_p95_ms": 300, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "ZJ", "isp": "telecom", "node": "hz-2", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 20, "ttfb_p95_ms": 60, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "", "isp": "telecom", "node": "hz-3", "state": "fresh", "samples": 5000, "ttfb_p50_ms": 20, "ttfb_p95_ms": 60, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T03:00:00Z", "source": "hz"},
  {"province": "ZJ", "isp": "telecom", "node": "bj", "state": "stale", "samples": 5000, "ttfb_p50_ms": 1, "ttfb_p95_ms": 2, "error_ratio": 0, "hit_ratio": 0.9, "updated": "2026-12-02T02:00:00Z", "source": "hz"}
]}`)
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, "1.%d.%d.0/24\n", i/256, i%256)
	}
	input := writeFile(t, dir, "clients.txt", in.String())

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
