package health

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hangServer accepts connections and never answers. accepted receives each
// connection; a connection's done channel closes when the client hangs up.
type hangServer struct {
	l        net.Listener
	accepted chan chan struct{}
	wg       sync.WaitGroup
}

func newHangServer(t *testing.T) *hangServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	h := &hangServer{l: l, accepted: make(chan chan struct{}, 64)}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			done := make(chan struct{})
			select {
			case h.accepted <- done:
			default:
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				io.Copy(io.Discard, c) // returns when the prober closes
				c.Close()
				close(done)
			}()
		}
	}()
	t.Cleanup(h.close)
	return h
}

func (h *hangServer) addr() string { return h.l.Addr().String() }
func (h *hangServer) close()       { h.l.Close(); h.wg.Wait() }

func TestProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "status: ok") })
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	mux.HandleFunc("/load", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"ok","load":0.95}`) })
	mux.HandleFunc("/overload", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"load":1.5}`) })
	mux.HandleFunc("/textload", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"load":"high"}`) })
	mux.HandleFunc("/host", func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "www.example.org" {
			w.WriteHeader(http.StatusMisdirectedRequest)
		}
	})
	mux.HandleFunc("/sni", func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "example.com" || r.TLS == nil || r.TLS.ServerName != "example.com" {
			w.WriteHeader(http.StatusMisdirectedRequest)
		}
		io.WriteString(w, `{"load":0.5}`)
	})
	plain := httptest.NewServer(mux)
	defer plain.Close()
	secure := httptest.NewTLSServer(mux)
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	hang := newHangServer(t)
	closed := closedAddr(t)

	short := Duration(300 * time.Millisecond)
	tests := []struct {
		name     string
		spec     Spec
		roots    *x509.CertPool
		want     outcome
		wantLoad bool
	}{
		{"tcp open", Spec{Address: plain.Listener.Addr().String()}, nil, outcome{ok: true}, false},
		{"tcp closed", Spec{Address: closed}, nil, outcome{reason: ReasonConnect}, false},
		{"http closed", Spec{URL: "http://" + closed + "/ok"}, nil, outcome{reason: ReasonConnect}, false},
		{"http ok", Spec{URL: plain.URL + "/ok"}, nil, outcome{ok: true}, false},
		{"http body ok", Spec{URL: plain.URL + "/ok", ExpectBody: "ok"}, nil, outcome{ok: true}, false},
		{"http body mismatch", Spec{URL: plain.URL + "/ok", ExpectBody: "healthy"}, nil, outcome{reason: ReasonBody}, false},
		{"http status", Spec{URL: plain.URL + "/down"}, nil, outcome{reason: ReasonStatus}, false},
		{"http expected 503", Spec{URL: plain.URL + "/down", ExpectStatus: []int{503}}, nil, outcome{ok: true}, false},
		{"http 404", Spec{URL: plain.URL + "/missing", ExpectBody: "ok"}, nil, outcome{reason: ReasonStatus}, false},
		{"http load", Spec{URL: plain.URL + "/load", LoadField: "load", ExpectBody: "ok"}, nil, outcome{ok: true, load: 0.95, hasLoad: true}, true},
		{"http load out of range", Spec{URL: plain.URL + "/overload", LoadField: "load"}, nil, outcome{reason: ReasonBody}, false},
		{"http load not a number", Spec{URL: plain.URL + "/textload", LoadField: "load"}, nil, outcome{reason: ReasonBody}, false},
		{"http load missing", Spec{URL: plain.URL + "/load", LoadField: "cpu"}, nil, outcome{reason: ReasonBody}, false},
		{"http load not json", Spec{URL: plain.URL + "/ok", LoadField: "load"}, nil, outcome{reason: ReasonBody}, false},
		{"http host header", Spec{URL: plain.URL + "/host", Host: "www.example.org"}, nil, outcome{ok: true}, false},
		{"http wrong host header", Spec{URL: plain.URL + "/host"}, nil, outcome{reason: ReasonStatus}, false},
		{"http hangs", Spec{URL: "http://" + hang.addr() + "/ok", Timeout: short, Interval: Duration(time.Second)}, nil, outcome{reason: ReasonTimeout}, false},
		{"tcp hangs is up", Spec{Address: hang.addr()}, nil, outcome{ok: true}, false},
		{"https hangs", Spec{URL: "https://" + hang.addr() + "/ok", Timeout: short, Interval: Duration(time.Second)}, nil, outcome{reason: ReasonTimeout}, false},
		{"https sni", Spec{URL: secure.URL + "/sni", Host: "example.com", LoadField: "load"}, roots, outcome{ok: true, load: 0.5, hasLoad: true}, true},
		{"https without sni", Spec{URL: secure.URL + "/sni"}, roots, outcome{reason: ReasonStatus}, false},
		{"https unknown authority", Spec{URL: secure.URL + "/sni", Host: "example.com"}, nil, outcome{reason: ReasonTLS}, false},
		{"https wrong name", Spec{URL: secure.URL + "/sni", Host: "www.example.net"}, roots, outcome{reason: ReasonTLS}, false},
		{"https to plain http", Spec{URL: "https://" + plain.Listener.Addr().String() + "/ok"}, roots, outcome{reason: ReasonTLS}, false},
	}
	for _, tc := range tests {
		if tc.spec.Timeout == 0 { // only the hangs time out, however slow a TLS handshake is here
			tc.spec.Timeout, tc.spec.Interval = Duration(liveTimeout), Duration(2*liveTimeout)
		}
		s := tc.spec.WithDefaults(Spec{})
		if err := s.Validate(); err != nil {
			t.Fatalf("Test %q: invalid spec: %v", tc.name, err)
		}
		got := newProber(s, tc.roots).probe(context.Background())
		detail := got.detail
		got.detail = ""
		if got != tc.want {
			t.Errorf("Test %q: expected %+v, got %+v", tc.name, tc.want, got)
		}
		if want := details[tc.name]; !strings.Contains(detail, want) {
			t.Errorf("Test %q: the failure's text %q, want one with %q", tc.name, detail, want)
		}
	}
}

// details are what the failures of TestProbe say, beyond their reason:
// what an operator reads in the log and in explain.
var details = map[string]string{
	"tcp closed":              "connect: connection refused",
	"http closed":             "connect: connection refused",
	"http body mismatch":      `body without "healthy"`,
	"http status":             "status 503",
	"http 404":                "status 404",
	"http load out of range":  `body without a load_field "load" in 0..1`,
	"http load missing":       `body without a load_field "cpu" in 0..1`,
	"http wrong host header":  "status 421",
	"https unknown authority": "certificate signed by unknown authority",
	"https wrong name":        "not www.example.net",
}

func TestProbeCanceled(t *testing.T) {
	hang := newHangServer(t)
	s := Spec{URL: "http://" + hang.addr() + "/"}.WithDefaults(Spec{})
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan outcome, 1)
	go func() { res <- newProber(s, nil).probe(ctx) }()
	<-hang.accepted
	cancel()
	if got := <-res; got.ok {
		t.Errorf("Expected a canceled probe to fail, got %+v", got)
	}
}

// A target that sends response headers without end fails the probe with
// reason header once 16 KiB are read, well before the timeout.
func TestProbeEndlessHeaders(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("HTTP/1.1 200 OK\r\n"))
		line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
		for range 100000 { // 100 MB at most; the probe stops reading long before
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	s := Spec{URL: "http://" + l.Addr().String() + "/", Timeout: Duration(3 * liveTimeout), Interval: Duration(6 * liveTimeout)}.WithDefaults(Spec{})
	start := time.Now()
	got := newProber(s, nil).probe(context.Background())
	if got.ok || got.reason != ReasonHeader {
		t.Errorf("Expected reason %q, got %+v", ReasonHeader, got)
	}
	if d := time.Since(start); d > s.Timeout.D()/3 {
		t.Errorf("Probe took %v, want a failure well before the timeout %v", d, s.Timeout)
	}
}

// TestProbeOnceError: a failed probe's status carries its reason and
// text, as the tools show them.
func TestProbeOnceError(t *testing.T) {
	closed := closedAddr(t)
	spec := Spec{Address: closed}.WithDefaults(Spec{})
	snap := ProbeOnce(context.Background(), []Target{{ID: "a", Spec: spec}}, Options{})
	st, ok := snap.Status("a")
	if !ok || st.State != StateDown || st.Reason != ReasonConnect || st.Error != "connect: connection refused" {
		t.Errorf("Status %+v, want down, connect, connect: connection refused", st)
	}
}
