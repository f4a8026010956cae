package feed

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// Observe sees each row that names its clients, posted here or read from
// the fleet's stream, with its client network, window and histogram; a
// place's row is not observed.
func TestObserve(t *testing.T) {
	a, b := testFeed(t), testFeed(t)
	type seen struct {
		client, source string
		requests, hist float64
	}
	var mu sync.Mutex
	got := map[*Feed][]seen{}
	for _, f := range []*Feed{a, b} {
		f.Observe = func(r *Row, source string) {
			var h Hist
			r.Buckets(func(k int, n float64) { h[k] += n })
			if d := testNow.Add(-time.Minute).Sub(r.Start); d < 0 || d >= time.Second {
				t.Errorf("Row window %s, want the row's start", r.Start)
			}
			mu.Lock()
			got[f] = append(got[f], seen{r.Client.String(), source, r.Requests, h.Total()})
			mu.Unlock()
		}
	}
	var shared []byte
	a.Share = func(rows []Placed) { shared, _ = EncodePlaced(rows) }
	row := rowAt("hz-1", testNow, "")
	body := row + "\n" + strings.Replace(row, `"province":"ZJ","isp":"telecom"`, `"client":"1.2.3.0/24"`, 1)
	if res, err := a.Ingest(context.Background(), &a.cfg.Sources[0], []byte(body)); err != nil || res.Accepted != 2 {
		t.Fatalf("Ingest: %+v %v", res, err)
	}
	if err := b.AddEncoded(shared); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*Feed{a, b} {
		if s := got[f]; len(s) != 1 || s[0].client != "1.2.3.0/24" || s[0].source != "hz" || s[0].requests != 1000 || s[0].hist < 900 {
			t.Errorf("Observed %+v, want the client's row once with its histogram", s)
		}
	}
}
