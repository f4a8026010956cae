package health

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"sync"
)

// What is read of a probe response: a target that sends endless headers or
// an endless body must not grow the server's memory.
const (
	maxHeader = 16 << 10
	maxBody   = 64 << 10
)

// httpKind checks three layers: the connection opens, the status is
// acceptable, and the body holds expect_body (and load_field).
var httpKind = kind{
	keys: []string{"url", "host", "expect_status", "expect_body", "load_field"},
	validate: func(s Spec) error {
		if s.URL == "" {
			return fmt.Errorf("probe.url: required for a %s probe", s.Type)
		}
		u, err := url.Parse(s.URL)
		if err != nil {
			return fmt.Errorf("probe.url: %w", err)
		}
		if u.Scheme != s.Type {
			return fmt.Errorf("probe.url: scheme %q does not match probe.type %q", u.Scheme, s.Type)
		}
		if u.Hostname() == "" {
			return fmt.Errorf("probe.url: %q has no host", s.URL)
		}
		for _, c := range s.ExpectStatus {
			if c < 100 || c > 599 {
				return fmt.Errorf("probe.expect_status: %d is not an HTTP status (100..599)", c)
			}
		}
		return nil
	},
	new: newHTTPProber,
}

type httpProber struct {
	spec   Spec
	addr   string // host:port to dial
	tls    *tls.Config
	dialer net.Dialer
	// req is the request, written once: a probe sends its bytes and
	// reads the response for it (a hundred nodes probed every second
	// made and wrote a request each, a third of a probe's garbage);
	// reqErr is why it could not be made.
	req    *http.Request
	wire   []byte
	reqErr error
}

func newHTTPProber(s Spec, roots *x509.CertPool) prober {
	u, err := url.Parse(s.URL)
	if err != nil {
		u = &url.URL{Scheme: s.Type}
	}
	p := &httpProber{spec: s}
	port := u.Port()
	if port == "" {
		port = "80"
		if s.Type == TypeHTTPS {
			port = "443"
		}
	}
	p.addr = net.JoinHostPort(u.Hostname(), port)
	if s.Type == TypeHTTPS {
		sni := s.Host
		if sni == "" {
			sni = u.Hostname()
		}
		if h, _, err := net.SplitHostPort(sni); err == nil {
			sni = h
		}
		p.tls = &tls.Config{ServerName: sni, RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	p.req, p.reqErr = http.NewRequest(http.MethodGet, u.String(), nil)
	if p.reqErr == nil {
		if s.Host != "" {
			p.req.Host = s.Host
		}
		p.req.Close = true
		p.req.Header.Set("User-Agent", "coredns-gslb-probe")
		var b bytes.Buffer
		if p.reqErr = p.req.Write(&b); p.reqErr == nil {
			p.wire = b.Bytes()
		}
	}
	return p
}

func (p *httpProber) setSource(a netip.Addr) { p.dialer.LocalAddr = sourceAddr(a) }

func (p *httpProber) probe(parent context.Context) outcome {
	ctx, cancel := context.WithTimeout(parent, p.spec.Timeout.D())
	defer cancel()

	conn, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return fail(ctx, err, ReasonConnect)
	}
	defer conn.Close()
	// Unblock reads and writes when the probe times out or the checker stops.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}

	if p.tls != nil {
		tc := tls.Client(conn, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(ctx, err, ReasonTLS)
		}
		conn = tc
	}

	if p.reqErr != nil {
		return outcome{reason: ReasonStatus, detail: p.reqErr.Error()}
	}
	if _, err := conn.Write(p.wire); err != nil {
		return fail(ctx, err, ReasonStatus)
	}
	// The reader and the body's buffer are pooled: a hundred nodes probed
	// every second made 8 KiB of garbage each.
	lr := &io.LimitedReader{R: conn, N: maxHeader}
	br := readers.Get().(*bufio.Reader)
	br.Reset(lr)
	defer func() { br.Reset(nil); readers.Put(br) }() // after the body's reads and Close
	resp, err := http.ReadResponse(br, p.req)
	if err != nil {
		if lr.N <= 0 {
			return outcome{reason: ReasonHeader, detail: "response headers over 16 KiB"}
		}
		return fail(ctx, err, ReasonStatus)
	}
	lr.N += maxBody
	defer resp.Body.Close()
	if !p.spec.statusOK(resp.StatusCode) {
		return outcome{reason: ReasonStatus, detail: "status " + strconv.Itoa(resp.StatusCode)}
	}
	if p.spec.ExpectBody == "" && p.spec.LoadField == "" {
		return outcome{ok: true}
	}

	buf := bodies.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); bodies.Put(buf) }()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxBody)); err != nil {
		return fail(ctx, err, ReasonBody)
	}
	body := buf.Bytes()
	if p.spec.ExpectBody != "" && !bytes.Contains(body, []byte(p.spec.ExpectBody)) {
		return outcome{reason: ReasonBody, detail: "body without " + strconv.Quote(p.spec.ExpectBody)}
	}
	if p.spec.LoadField == "" {
		return outcome{ok: true}
	}
	load, ok := parseLoad(body, p.spec.LoadField)
	if !ok {
		return outcome{reason: ReasonBody, detail: "body without a load_field " + strconv.Quote(p.spec.LoadField) + " in 0..1"}
	}
	return outcome{ok: true, load: load, hasLoad: true}
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}
	bodies  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// statusOK reports whether code is acceptable: expect_status, or 200-399.
func (s *Spec) statusOK(code int) bool {
	if len(s.ExpectStatus) == 0 {
		return code >= 200 && code <= 399
	}
	return slices.Contains(s.ExpectStatus, code)
}

// parseLoad reads the top-level numeric field from a JSON object. A missing,
// non-numeric or out-of-range (0..1) value is a content failure.
func parseLoad(body []byte, field string) (float64, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return 0, false
	}
	raw, ok := m[field]
	if !ok {
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, false
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		return 0, false
	}
	return f, true
}
