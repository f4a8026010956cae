package control

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/redis/go-redis/v9"
)

// BenchmarkFeedStream is what one redis-server carries of the fleet's
// feed: batches of 1000 placed rows (a TTFB histogram each), added with
// XADD and read back with XREAD, as a member shares and another folds.
func BenchmarkFeedStream(b *testing.B) {
	srv := testredis.Start(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	rows := make([]feed.Placed, 1000)
	for i := range rows {
		hits := 100.0
		rows[i] = feed.Placed{Key: feed.Key{Province: "ZJ", ISP: "telecom", Node: fmt.Sprintf("hz-%d", i%100)}, Source: "edges",
			Requests: 120, Errors: 1, Hits: &hits, Hist: [][2]float64{{26, 40}, {31, 50}, {40, 20}, {47, 9}}}
	}
	data, err := feed.EncodePlaced(rows)
	if err != nil {
		b.Fatal(err)
	}
	key := feedStreamKey("bench")
	ctx := context.Background()
	last := "0"
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: feedStreamLen, Approx: true,
			Values: map[string]any{"member": "a", "rows": data}}).Err(); err != nil {
			b.Fatal(err)
		}
		res, err := client.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 100, Block: time.Second}).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range res {
			for _, m := range s.Messages {
				last = m.ID
			}
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// A batch posted to one member goes through the fleet's stream into
// another's cells, and not back into its own twice.
func TestFeedStreamShares(t *testing.T) {
	srv := testredis.Start(t)
	member := func(name, addr string) (*Control, *adminBackend) {
		dir := fixture(t, fixtureNodes)
		block := strings.Replace(feedBlock(t, dir, feedToken), "admin 127.0.0.1:0", "admin "+addr, 1)
		block = strings.Replace(block, "feed {\n", "redis "+srv.Addr()+"\nfleet stream-test {\nvantage telecom\nmember "+name+"\n}\nfeed {\ncycle 100ms\n", 1)
		c := newTestControl(t, dir, block)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c, &adminBackend{c: c}
	}
	_, a := member("m1", "127.0.0.1:0")
	_, b := member("m2", "127.0.0.2:0")

	postFeed(t, a, `{"node":"hz-b","start":%q,"seconds":60,"client":"1.0.1.0/24","requests":500,"errors":0,"ttfb_p50_ms":20,"ttfb_p95_ms":80}`, time.Now())
	samples := func(be *adminBackend) func() (bool, string) {
		return func() (bool, string) {
			got, err := be.FeedCells()
			if err != nil {
				return false, err.Error()
			}
			cells := got.(feed.CellsJSON).Cells
			return len(cells) == 1 && cells[0].Node == "hz-b" && cells[0].Samples > 0, fmt.Sprintf("%+v", cells)
		}
	}
	testsupport.WaitFor(t, "the posting member's cell", samples(a))
	testsupport.WaitFor(t, "the other member's cell, from the stream", samples(b))
	ca, _ := a.FeedCells()
	cb, _ := b.FeedCells()
	if x, y := ca.(feed.CellsJSON).Cells[0], cb.(feed.CellsJSON).Cells[0]; x.Key != y.Key || !near(x.P50, y.P50) || !near(x.P95, y.P95) {
		t.Errorf("Cells differ: %+v here, %+v from the stream", x, y)
	}
	// Both folded the batch once: the same decayed samples within a cycle
	// or two of each other.
	if x, y := ca.(feed.CellsJSON).Cells[0].Samples, cb.(feed.CellsJSON).Cells[0].Samples; x > 1.5*y || y > 1.5*x {
		t.Errorf("Samples %v here and %v from the stream: the batch was folded more than once", x, y)
	}
}

// near: equal but for the last bits, which the two folds' decay at
// slightly different times may round apart.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
