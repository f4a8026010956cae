package health

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkRemovalDefaults measures the time from a node's failure (its
// server goes away) to its removal, with the default interval 5s and fall 3.
// Run with -benchtime=1x: one iteration takes about 10-15s.
func BenchmarkRemovalDefaults(b *testing.B) {
	var total time.Duration
	for range b.N {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		down := make(chan time.Time, 1)
		c := New([]Target{{ID: "bench", Spec: Spec{URL: srv.URL}}}, Options{}, func(s *Snapshot) {
			if st, _ := s.Status("bench"); st.State == StateDown {
				select {
				case down <- time.Now():
				default:
				}
			}
		})
		c.Start()
		for i := 0; !c.Ready(); i++ {
			if i > 1000 {
				b.Fatalf("Timed out waiting for the first probe")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if st, _ := c.Snapshot().Status("bench"); st.State != StateUp {
			b.Fatalf("Expected up, got %s", st.State)
		}
		// Fail at a random point of the probe cycle.
		time.Sleep(time.Duration(time.Now().UnixNano() % int64(DefaultInterval)))
		failed := time.Now()
		srv.Close()
		select {
		case at := <-down:
			total += at.Sub(failed)
		case <-time.After(30 * time.Second):
			b.Fatalf("Expected the node removed within 30s")
		}
		c.Stop()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/removal")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSnapshotStatus is the query path's read: it must not allocate.
func BenchmarkSnapshotStatus(b *testing.B) {
	targets := make([]Target, 100)
	for i := range targets {
		targets[i] = Target{ID: "node-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Spec: Spec{Address: "127.0.0.1:1"}}
	}
	c := New(targets, Options{}, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok := c.Snapshot().Status("node-kc"); !ok {
			b.Fatalf("Expected node-kc to be probed")
		}
	}
}

// BenchmarkHTTPProbe: one http probe with a load_field, over loopback to a
// listener that answers a fixed response: what a probe costs the server.
func BenchmarkHTTPProbe(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{\"load\":0.5}\n")
	go func() {
		buf := make([]byte, 4096)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			for n := 0; !bytes.Contains(buf[:n], []byte("\r\n\r\n")) && n < len(buf); {
				k, err := c.Read(buf[n:])
				if err != nil {
					break
				}
				n += k
			}
			c.Write(resp)
			c.Close()
		}
	}()
	s := Spec{URL: "http://" + l.Addr().String() + "/health", LoadField: "load", Timeout: Duration(time.Second), Interval: Duration(time.Second)}.WithDefaults(Spec{})
	p := newProber(s, nil)
	b.ReportAllocs()
	for b.Loop() {
		if out := p.probe(context.Background()); !out.ok || out.load != 0.5 {
			b.Fatalf("%+v", out)
		}
	}
}
