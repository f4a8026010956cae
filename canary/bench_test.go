package canary

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/table"
)

// BenchmarkObserve: what the autopilot adds to the feed's ingest per row
// with a client network (its cohort and its sums).
func BenchmarkObserve(b *testing.B) {
	plan := &config.Plan{Steps: []float64{5, 100}, Dwell: time.Minute, MinSamples: 1000, SourceShare: 0.5, Guards: config.DefaultGuards}
	r := New(config.Canary{File: "bench", Percent: 5, RollbackCross: -1, Window: time.Minute, Plan: plan}, &table.Table{}, KeysOf("bench salt 0123456789"))
	start := r.pilot.st.Since
	rows := make([]feed.Row, 1000)
	for i := range rows {
		n, h, p50, p95 := 100.0, 90.0, 30.0, 90.0
		y := feed.RowJSON{Node: "n", Start: start.Format(time.RFC3339Nano), Seconds: 60, Requests: &n, Hits: &h, TTFBP50: &p50, TTFBP95: &p95,
			Client: netip.PrefixFrom(netip.AddrFrom4([4]byte{1, byte(i >> 8), byte(i), 0}), 24).String()}
		row, err := y.Check(i, func(string) bool { return true }, start.Add(time.Minute), time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		row.Province, row.ISP = "ZJ", "telecom"
		rows[i] = row
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Observe(&rows[i%len(rows)], "edge")
	}
}
