package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// Probes leave from Options.Source: a multi-homed member probes from the
// address its vantage is reached through.
func TestProbeSource(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer l.Close()
	from := make(chan string, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		from <- host
	}))
	defer web.Close()

	targets := []Target{
		{ID: "tcp", Spec: Spec{Type: TypeTCP, Address: l.Addr().String(), Timeout: Duration(liveTimeout), Interval: Duration(2 * liveTimeout)}},
		{ID: "http", Spec: Spec{Type: TypeHTTP, URL: web.URL + "/", Timeout: Duration(liveTimeout), Interval: Duration(2 * liveTimeout)}},
	}
	snap := ProbeOnce(context.Background(), targets, Options{Source: netip.MustParseAddr("127.0.0.2")})
	for _, id := range []string{"tcp", "http"} {
		if st, _ := snap.Status(id); st.State != StateUp {
			t.Errorf("Expected %s up, got %+v", id, st)
		}
	}
	for range targets {
		if got := <-from; got != "127.0.0.2" {
			t.Errorf("Expected the probe from 127.0.0.2, got %s", got)
		}
	}
}
