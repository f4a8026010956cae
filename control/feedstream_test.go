package control

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/internal/testredis"

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
