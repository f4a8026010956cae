package feed

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gslbdns/gslb/table"
)

// benchFeed is a feed over a table of 100 nodes, whose client networks
// are all placed in Zhejiang telecom.
func benchFeed(b *testing.B) (*Feed, *Source) {
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := range 100 {
		fmt.Fprintf(&y, "  - {id: hz-%d, ipv4: [192.0.2.%d], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n", i, i%250+1)
	}
	y.WriteString("records:\n  - name: www.example.org\n")
	t, err := table.Parse("nodes.yaml", []byte(y.String()), []string{"example.org."}, 60)
	if err != nil {
		b.Fatal(err)
	}
	src := Source{Name: "edges", Token: "t", Nodes: []string{"hz-*"}, Rate: 1e7}
	cfg := DefaultConfig()
	cfg.Sources = []Source{src}
	cfg.MaxRows = 10000
	place := func(context.Context, netip.Prefix) (string, string) { return "ZJ", "telecom" }
	f := New(cfg, place, 0.2, nil)
	f.SetTable(t)
	return f, &f.cfg.Sources[0]
}

// BenchmarkIngestFold takes batches of 10,000 NDJSON rows (100 nodes × 100
// client /24s, each with a TTFB histogram) through validation, placing,
// the replay check and the fold, and folds after every batch.
func BenchmarkIngestFold(b *testing.B) {
	f, src := benchFeed(b)
	const rows = 10000
	batches := make([][]byte, 0, 64)
	start := time.Now().Add(-20 * time.Minute)
	for k := range 64 {
		var body strings.Builder
		ws := start.Add(time.Duration(k) * 5 * time.Second).UTC().Format(time.RFC3339)
		for i := range rows {
			fmt.Fprintf(&body, `{"node":"hz-%d","start":%q,"seconds":10,"client":"1.%d.%d.0/24","requests":120,"errors":1,"hits":100,"bytes":5000000,"ttfb_hist":[[12,40],[20,50],[45,20],[90,9]]}`+"\n",
				i%100, ws, i/256, i%256)
		}
		batches = append(batches, []byte(body.String()))
	}
	now := start.Add(6 * time.Minute)
	f.now = func() time.Time { return now }
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		k := n % len(batches)
		if k == 0 && n > 0 {
			b.StopTimer()
			f.seen = map[replayKey]time.Time{} // the same windows again
			b.StartTimer()
		}
		res, err := f.Ingest(context.Background(), src, batches[k])
		if err != nil || res.Accepted != rows {
			b.Fatalf("Ingest: %+v %v", res, err)
		}
		f.Cycle(now)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	// On a shared machine the wall clock counts other processes' time:
	// the process's own CPU time is what one core gives.
	b.ReportMetric(float64(b.N*rows)/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
