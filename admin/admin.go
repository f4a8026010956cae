// Package admin is gslb's runtime control: an HTTP API to drain nodes, pin
// networks, explain decisions and set the canary share, and the state file
// that keeps what it changed. The API serves one Backend, a gslb block's
// control plane; the listener is shared by address across Corefile reloads.
package admin

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/overrides"
)

var log = clog.NewWithPlugin("gslb")

// Config is the Corefile's admin block.
type Config struct {
	Addr  string
	Token string // from token_file; "" only on a loopback address
	State string // the state file; "": changes last until a restart
}

// Node is one node as GET /v1/nodes shows it.
type Node struct {
	ID      string     `json:"id"`
	State   string     `json:"state"` // the probes' verdict: up, down, unknown, or unprobed
	Reason  string     `json:"reason,omitempty"`
	Load    float64    `json:"load"`
	Drained bool       `json:"drained"`
	Since   *time.Time `json:"since,omitempty"` // of the drain when drained, else of the probe state
	Records []string   `json:"records"`
	Tables  []string   `json:"tables"`           // the node tables that have it: stable, canary
	Origin  *Origin    `json:"origin,omitempty"` // of its drain or undrain, in a fleet
}

// Origin is where a shared change came from: the fleet member and when.
type Origin struct {
	Member string    `json:"member"`
	Time   time.Time `json:"time"`
}

// Pin is one pin as the API shows it.
type Pin struct {
	overrides.EntryYAML
	Origin *Origin `json:"origin,omitempty"` // in a fleet
}

// PinRequest is the body of POST /v1/pins.
type PinRequest struct {
	CIDR     string                  `json:"cidr"`
	Nodes    []string                `json:"nodes,omitempty"`
	Location *overrides.LocationYAML `json:"location,omitempty"`
	TTL      string                  `json:"ttl,omitempty"`
	Note     string                  `json:"note,omitempty"`
}

// Canary is the canary rollout's state.
type Canary struct {
	File        string  `json:"file"`
	Percent     float64 `json:"percent"`          // the share in force
	Configured  float64 `json:"corefile_percent"` // the Corefile's PERCENT
	RolledBack  bool    `json:"rolled_back"`
	Reason      string  `json:"reason,omitempty"`
	Decisions   uint64  `json:"decisions"` // canary decisions since it (re)started
	Cross       float64 `json:"cross_province_ratio"`
	StableCross float64 `json:"stable_cross_province_ratio"`
	// Autopilot is the plan's state; absent without a plan.
	Autopilot any `json:"autopilot,omitempty"`
}

// CanaryRequest is the body of POST /v1/canary: a share (it pauses the
// autopilot), or the autopilot's "pause" or "resume".
type CanaryRequest struct {
	Percent   *float64 `json:"percent,omitempty"`
	Autopilot string   `json:"autopilot,omitempty"`
}

// Backend is what the API controls.
type Backend interface {
	Nodes() []Node
	// Drain drains or undrains a node; ErrNotFound for an unknown id.
	Drain(id string, drained bool, who string) (Node, error)
	Pins() []Pin
	// AddPin validates and adds a pin; a *BadRequest says why not.
	AddPin(req PinRequest, who string) ([]Pin, error)
	// DeletePin removes the pin of prefix; ErrNotFound when there is none.
	DeletePin(prefix netip.Prefix, who string) ([]Pin, error)
	// Explain is gslb explain's content for one query; a *BadRequest for a
	// bad address, name or type.
	Explain(ctx context.Context, addr, name, qtype string) (any, error)
	// Canary reports the rollout; ErrNotFound without a canary line.
	Canary() (Canary, error)
	// SetCanary sets the share; ErrNotFound without a canary line.
	SetCanary(req CanaryRequest, who string) (Canary, error)
}

// Feeder is a Backend that takes the edges' feed: POST /v1/feed carries
// a feed source's token, which FeedHandler checks, not the admin token.
type Feeder interface {
	FeedHandler() http.Handler // nil: no feed block
	FeedCells() (any, error)   // GET /v1/feed
}

// Planner is a Backend that serves the disaster-recovery plans:
// /v1/plans and what is under it.
type Planner interface {
	PlansHandler() http.Handler
}

// ErrNotFound is a 404.
var ErrNotFound = errors.New("not found")

// ErrUnavailable is a 503: the instance is not serving (yet, or any more).
var ErrUnavailable = errors.New("this gslb instance is not serving: retry")

// ErrSuperseded: a later load of the Corefile serves the API now; the
// change is retried there.
var ErrSuperseded = errors.New("a later Corefile load serves the admin API")

// Refused is a 503 with its reason: the instance takes no change now.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return e.Reason }

// BadRequest is a 400 with its reason.
type BadRequest struct{ Reason string }

func (e *BadRequest) Error() string { return e.Reason }

// Badf is a BadRequest.
func Badf(format string, a ...any) error { return &BadRequest{fmt.Sprintf(format, a...)} }

// maxBody bounds a request body.
const maxBody = 64 << 10

// target is what a shared listener serves now.
type target struct {
	b     Backend
	token string
}

// server is one address's listener, shared by the gslb blocks of
// successive Corefile loads that name it.
type server struct {
	addr string
	ln   net.Listener
	http *http.Server
	cur  atomic.Pointer[target]
	refs []*Handle
	// save orders the state saves of all the blocks on the address with
	// the switch of cur: a save either lands before a later block takes
	// over (and is in the state it restores) or is refused.
	save         sync.Mutex
	unauthorized ratelog.Limit
}

// Handle is a block's hold on its address.
type Handle struct {
	s      *server
	t      *target
	follow func(*State) // applies a later block's saved state to this one
}

var (
	mu      sync.Mutex
	servers = map[string]*server{}
)

// Acquire starts serving b on cfg.Addr, or takes over the listener a
// previous load of the Corefile left there.
func Acquire(cfg Config, b Backend) (*Handle, error) {
	mu.Lock()
	defer mu.Unlock()
	t := &target{b: b, token: cfg.Token}
	s := servers[cfg.Addr]
	if s == nil {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("admin %s: %w", cfg.Addr, err)
		}
		s = &server{addr: cfg.Addr, ln: ln}
		s.http = &http.Server{Handler: s.guard(s.routes()), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
			ErrorLog: nil}
		servers[cfg.Addr] = s
		go recovery.Do("admin", func() {
			if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Errorf("admin %s: %v", cfg.Addr, err)
			}
		})
		log.Infof("admin API on http://%s", ln.Addr())
	}
	s.save.Lock()
	s.cur.Store(t)
	s.save.Unlock()
	h := &Handle{s: s, t: t}
	s.refs = append(s.refs, h)
	return h, nil
}

// Follow sets what applies the state another block on the address saved
// to h's block, which may still answer queries until it stops.
func (h *Handle) Follow(fn func(*State)) {
	mu.Lock()
	defer mu.Unlock()
	h.follow = fn
}

// Save runs write, which makes st durable, if h's block serves the API;
// ErrSuperseded if a later block took it over. The other blocks on the
// address then follow st before Save returns, so that none of them
// answers against an acknowledged change.
func (h *Handle) Save(st *State, write func() error) error {
	s := h.s
	s.save.Lock()
	if s.cur.Load() != h.t {
		s.save.Unlock()
		return ErrSuperseded
	}
	err := write()
	s.save.Unlock()
	if err != nil {
		return err
	}
	mu.Lock()
	var others []func(*State)
	for _, r := range s.refs {
		if r != h && r.follow != nil {
			others = append(others, r.follow)
		}
	}
	mu.Unlock()
	for _, f := range others {
		f(st)
	}
	return nil
}

// Addr is the listener's address.
func (h *Handle) Addr() net.Addr { return h.s.ln.Addr() }

// Reclaim points the listener back at h's block: the block that took it
// over belongs to a Corefile reload that failed and never runs. Holds
// taken after h's are dropped with it.
func (h *Handle) Reclaim() {
	mu.Lock()
	defer mu.Unlock()
	s := h.s
	for i, r := range s.refs {
		if r == h {
			s.refs = s.refs[:i+1]
			break
		}
	}
	s.save.Lock()
	s.cur.Store(h.t)
	s.save.Unlock()
}

// Release gives the address up; the last holder closes the listener.
func (h *Handle) Release() {
	mu.Lock()
	defer mu.Unlock()
	s := h.s
	for i, r := range s.refs {
		if r == h {
			s.refs = append(s.refs[:i], s.refs[i+1:]...)
			break
		}
	}
	if len(s.refs) > 0 {
		s.save.Lock()
		if s.cur.Load() == h.t {
			s.cur.Store(s.refs[len(s.refs)-1].t)
		}
		s.save.Unlock()
		return
	}
	delete(servers, s.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		s.http.Close()
	}
}

// guard refuses cross-site requests (a browser page posting to the API)
// and requests for a host name (DNS rebinding: a page of the attacker's
// name that resolves to the API): the Host must be an IP address, or
// localhost, and a loopback one on an API without a token. With a token,
// every endpoint needs it.
func (s *server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := s.cur.Load()
		if t == nil {
			writeError(w, http.StatusServiceUnavailable, ErrUnavailable.Error())
			return
		}
		if err := checkHost(r.Host, t.token != ""); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		if t.token != "" && !feedPost(r) && !authorized(r, t.token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gslb"`)
			writeError(w, http.StatusUnauthorized, "a valid bearer token is required")
			logUnauthorized(&s.unauthorized, r)
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// feedPost is a request the feed's own source tokens authorize.
func feedPost(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/v1/feed" || r.URL.Path == "/v1/beacons")
}

// checkHost accepts a Host header that names an address, not a name that
// could resolve to one.
func checkHost(host string, token bool) error {
	h, _, err := net.SplitHostPort(hostPort(host))
	if err != nil {
		return fmt.Errorf("host %q is not HOST[:PORT]", host)
	}
	if h == "localhost" {
		return nil
	}
	a, err := netip.ParseAddr(h)
	switch {
	case err != nil:
		return fmt.Errorf("host %q is not an IP address (a DNS name could rebind to the API): use the address", host)
	case !token && !a.IsLoopback():
		return fmt.Errorf("host %q is not a loopback address", host)
	}
	return nil
}

// logUnauthorized logs a refused request at most once per logInterval,
// with the count of those it left out: a flood of bad tokens is one line,
// not one per request.
func logUnauthorized(l *ratelog.Limit, r *http.Request) {
	if ok, dropped := l.Allow(logInterval); ok {
		log.Warningf("admin: unauthorized %s %q from %s%s", r.Method, r.URL.Path, r.RemoteAddr, ratelog.Note(dropped))
	}
}

const logInterval = 10 * time.Second

// hostPort makes a Host header HOST:PORT for Loopback.
func hostPort(h string) string {
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), "0")
}

func (s *server) routes() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/nodes", s.nodes)
	m.HandleFunc("POST /v1/nodes/{id}/drain", s.change(func(t *target, r *http.Request, body []byte, who string) (any, error) {
		return t.b.Drain(r.PathValue("id"), true, who)
	}))
	m.HandleFunc("POST /v1/nodes/{id}/undrain", s.change(func(t *target, r *http.Request, body []byte, who string) (any, error) {
		return t.b.Drain(r.PathValue("id"), false, who)
	}))
	m.HandleFunc("GET /v1/pins", s.pins)
	m.HandleFunc("POST /v1/pins", s.change(func(t *target, r *http.Request, body []byte, who string) (any, error) {
		var req PinRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		return t.b.AddPin(req, who)
	}))
	m.HandleFunc("DELETE /v1/pins/{cidr...}", s.change(func(t *target, r *http.Request, body []byte, who string) (any, error) {
		p, err := overrides.ParsePrefix(r.PathValue("cidr"))
		if err != nil {
			return nil, Badf("cidr: %v", err)
		}
		return t.b.DeletePin(p, who)
	}))
	m.HandleFunc("GET /v1/explain", s.explain)
	m.HandleFunc("POST /v1/feed", s.feedPost)
	m.HandleFunc("GET /v1/feed", s.feedCells)
	m.HandleFunc("/v1/plans", s.plans)
	m.HandleFunc("/v1/plans/", s.plans)
	s.resolverRoutes(m)
	m.HandleFunc("GET /v1/canary", s.canary)
	m.HandleFunc("POST /v1/canary", s.change(func(t *target, r *http.Request, body []byte, who string) (any, error) {
		var req CanaryRequest
		if err := decode(body, &req); err != nil {
			return nil, err
		}
		switch {
		case req.Percent == nil && req.Autopilot == "":
			return nil, Badf("percent: missing (or autopilot: pause or resume)")
		case req.Percent != nil && req.Autopilot != "":
			return nil, Badf("autopilot: give percent or autopilot, not both")
		case req.Autopilot != "" && req.Autopilot != "pause" && req.Autopilot != "resume":
			return nil, Badf("autopilot: %q is not pause or resume", req.Autopilot)
		case req.Percent != nil && (*req.Percent < 0 || *req.Percent > 100 || *req.Percent != *req.Percent):
			return nil, Badf("percent: %g is outside 0..100", *req.Percent)
		}
		return t.b.SetCanary(req, who)
	}))
	return m
}

// decode reads a JSON body strictly.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Badf("body: %v", err)
	}
	if dec.More() {
		return Badf("body: more than one JSON value")
	}
	return nil
}

// change wraps a state-changing endpoint: the change, then its new state
// as JSON. A change that reached a block a Corefile reload replaced
// meanwhile is made on the block that serves now.
func (s *server) change(fn func(t *target, r *http.Request, body []byte, who string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			reply(w, nil, Badf("body: %v", err))
			return
		}
		var v any
		for range 8 {
			t := s.cur.Load()
			if t == nil {
				err = ErrUnavailable
				break
			}
			v, err = fn(t, r, body, r.RemoteAddr)
			// Superseded, or stopped once superseded: the block that
			// serves now makes it.
			if !errors.Is(err, ErrSuperseded) && !(errors.Is(err, ErrUnavailable) && s.cur.Load() != t) {
				break
			}
		}
		reply(w, v, err)
	}
}

func authorized(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

func (s *server) backend(w http.ResponseWriter) Backend {
	t := s.cur.Load()
	if t == nil {
		http.Error(w, "gslb is not serving", http.StatusServiceUnavailable)
		return nil
	}
	return t.b
}

func (s *server) nodes(w http.ResponseWriter, _ *http.Request) {
	if b := s.backend(w); b != nil {
		reply(w, b.Nodes(), nil)
	}
}

func (s *server) pins(w http.ResponseWriter, _ *http.Request) {
	if b := s.backend(w); b != nil {
		reply(w, b.Pins(), nil)
	}
}

func (s *server) plans(w http.ResponseWriter, r *http.Request) {
	b := s.backend(w)
	if b == nil {
		return
	}
	if p, ok := b.(Planner); ok {
		p.PlansHandler().ServeHTTP(w, r)
		return
	}
	writeError(w, http.StatusNotFound, "this gslb block has no plans")
}

func (s *server) canary(w http.ResponseWriter, _ *http.Request) {
	if b := s.backend(w); b != nil {
		v, err := b.Canary()
		reply(w, v, err)
	}
}

func (s *server) feedPost(w http.ResponseWriter, r *http.Request) {
	b := s.backend(w)
	if b == nil {
		return
	}
	if f, ok := b.(Feeder); ok {
		if h := f.FeedHandler(); h != nil {
			h.ServeHTTP(w, r)
			return
		}
	}
	writeError(w, http.StatusNotFound, "no feed block in this gslb block")
}

func (s *server) feedCells(w http.ResponseWriter, _ *http.Request) {
	b := s.backend(w)
	if b == nil {
		return
	}
	f, ok := b.(Feeder)
	if !ok {
		writeError(w, http.StatusNotFound, "no feed block in this gslb block")
		return
	}
	v, err := f.FeedCells()
	reply(w, v, err)
}

func (s *server) explain(w http.ResponseWriter, r *http.Request) {
	b := s.backend(w)
	if b == nil {
		return
	}
	q := r.URL.Query()
	if q.Get("addr") == "" {
		writeError(w, http.StatusBadRequest, "addr: missing (addr=ADDRESS or ADDRESS/PREFIX)")
		return
	}
	v, err := b.Explain(r.Context(), q.Get("addr"), q.Get("name"), q.Get("type"))
	reply(w, v, err)
}

// Reply writes v as JSON, or err with its status.
func Reply(w http.ResponseWriter, v any, err error) { reply(w, v, err) }

// StatusError is an error that is its own reply: its status, and itself
// as the JSON body (a 409 with the figures that refused it).
type StatusError interface {
	error
	Status() int
}

func reply(w http.ResponseWriter, v any, err error) {
	var bad *BadRequest
	var se StatusError
	switch {
	case errors.As(err, &se):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(se.Status())
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(se)
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, bad.Reason)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, new(*TooLarge)):
		writeError(w, http.StatusInsufficientStorage, err.Error())
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrSuperseded), errors.As(err, new(*Refused)):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// Loopback reports whether addr (HOST:PORT) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
