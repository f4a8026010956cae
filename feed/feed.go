package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/table"
)

// Config is the Corefile's feed block.
type Config struct {
	Cycle      time.Duration // how often the fold runs
	HalfLife   time.Duration
	MaxAge     time.Duration // rows and cells older are stale
	MinSamples float64
	Hysteresis float64
	MaxRows    int   // per request
	MaxBody    int64 // bytes per request
	Sources    []Source
	Line       int
}

// Defaults of the feed block.
const (
	DefaultCycle      = time.Minute
	DefaultHalfLife   = time.Minute
	DefaultMaxAge     = 10 * time.Minute
	DefaultMinSamples = 100
	DefaultHysteresis = 0.25
	DefaultMaxRows    = 10000
	DefaultMaxBody    = 4 << 20
	DefaultRate       = 1000
)

// DefaultConfig is the feed block's defaults.
func DefaultConfig() Config {
	return Config{Cycle: DefaultCycle, HalfLife: DefaultHalfLife, MaxAge: DefaultMaxAge, MinSamples: DefaultMinSamples,
		Hysteresis: DefaultHysteresis, MaxRows: DefaultMaxRows, MaxBody: DefaultMaxBody}
}

// Placer places a client network: its province and carrier, "" for what
// is not known.
type Placer func(ctx context.Context, p netip.Prefix) (province, isp string)

// Feed takes the sources' rows and folds them every cycle. The cells it
// publishes are immutable; decisions read them through the view the
// control plane builds.
type Feed struct {
	cfg     Config
	place   Placer
	now     func() time.Time
	table   atomic.Pointer[table.Table]
	buckets map[string]*bucket // per source
	*state
	id      string // "": not shared
	foldCfg FoldConfig

	// Share, when set, hands each accepted batch to the fleet's stream.
	Share func([]Placed)
	// Observe, when set, sees every row folded with a client network
	// (posted here or read from the fleet's stream), undecayed: the
	// canary's cohorts are client networks. It must be safe for
	// concurrent use.
	Observe func(r *Row, source string)
}

// observe hands r to Observe when it names its clients.
func (f *Feed) observe(r *Row, source string) {
	if f.Observe != nil && r.Client.IsValid() {
		f.Observe(r, source)
	}
}

// state is what a feed's rows made: the fold, the last cells, the windows
// taken and the place in the fleet's stream. A Corefile reload keeps it,
// so that the new instance decides from the same cells.
type state struct {
	fold  *Fold
	cells atomic.Pointer[Cells]
	refs  int // shared.mu

	mu   sync.Mutex
	seen map[replayKey]time.Time // the latest window start taken per key
	last streamID                // the newest stream entry folded
	run  string
}

// shared holds the states of the feeds in use, by identity.
var shared = struct {
	sync.Mutex
	m map[string]*state
}{m: map[string]*state{}}

// replayKey is what a window repeats on: the sender, the edge, the node
// and the clients.
type replayKey struct {
	source, edge string
	node         string
	client       netip.Prefix
	province     string
	isp          string
}

// New returns a feed for cfg; place locates client networks, maxErrorRate
// is the decisions' max_error_rate, now the clock (nil: time.Now).
func New(cfg Config, place Placer, maxErrorRate float64, now func() time.Time) *Feed {
	if now == nil {
		now = time.Now
	}
	return newFeed(cfg, place, now, newState(foldConfig(cfg, maxErrorRate)))
}

// Open is New for the feed of identity id (the server block's): while one
// is open, another opens on the same fold, cells and replay record, with
// cfg's tuning. Close lets go of it.
func Open(id string, cfg Config, place Placer, maxErrorRate float64) *Feed {
	fc := foldConfig(cfg, maxErrorRate)
	shared.Lock()
	defer shared.Unlock()
	st := shared.m[id]
	if st == nil {
		st = newState(fc)
		shared.m[id] = st
	} else {
		st.fold.setConfig(fc)
	}
	st.refs++
	f := newFeed(cfg, place, time.Now, st)
	f.id, f.foldCfg = id, fc
	return f
}

// Retune sets the shared fold back to this feed's tuning: its instance
// serves again after a reload that opened the feed with another failed.
func (f *Feed) Retune() { f.fold.setConfig(f.foldCfg) }

// Close lets go of an opened feed's state; the last one drops it.
func (f *Feed) Close() {
	if f.id == "" {
		return
	}
	shared.Lock()
	defer shared.Unlock()
	if f.state.refs--; f.state.refs <= 0 && shared.m[f.id] == f.state {
		delete(shared.m, f.id)
	}
	f.id = ""
}

func foldConfig(cfg Config, maxErrorRate float64) FoldConfig {
	return FoldConfig{HalfLife: cfg.HalfLife, MaxAge: cfg.MaxAge, MinSamples: cfg.MinSamples,
		Hysteresis: cfg.Hysteresis, MaxErrorRate: maxErrorRate}
}

func newState(fc FoldConfig) *state {
	st := &state{fold: NewFold(fc), seen: map[replayKey]time.Time{}, run: strconv.FormatUint(rand.Uint64(), 36)}
	st.cells.Store(&Cells{Count: map[string]int{Fresh: 0, Thin: 0, Stale: 0}})
	return st
}

func newFeed(cfg Config, place Placer, now func() time.Time, st *state) *Feed {
	f := &Feed{cfg: cfg, place: place, now: now, buckets: map[string]*bucket{}, state: st}
	for _, s := range cfg.Sources {
		// A request of max_rows rows always fits an idle bucket.
		f.buckets[s.Name] = newBucket(s.Rate, max(s.Rate, float64(cfg.MaxRows)))
	}
	return f
}

// SetTable sets the node table rows are checked against.
func (f *Feed) SetTable(t *table.Table) { f.table.Store(t) }

// Cells is the last fold's outcome.
func (f *Feed) Cells() *Cells { return f.cells.Load() }

// Config is the feed's configuration.
func (f *Feed) Config() Config { return f.cfg }

// Cycle folds at now and publishes the cells.
func (f *Feed) Cycle(now time.Time) *Cells {
	start := time.Now()
	c := f.fold.Fold(now)
	f.cells.Store(c)
	f.prune(now)
	foldSeconds.Observe(time.Since(start).Seconds())
	for _, st := range []string{Fresh, Thin, Stale} {
		cellsGauge.WithLabelValues(st).Set(float64(c.Count[st]))
	}
	// Places without fresh cells leave the gauge rather than show old
	// figures.
	ttfbGauge.Reset()
	for _, p := range c.Places {
		ttfbGauge.WithLabelValues(p.Province, p.ISP, "0.5").Set(p.P50 / 1000)
		ttfbGauge.WithLabelValues(p.Province, p.ISP, "0.95").Set(p.P95 / 1000)
	}
	return c
}

// prune forgets the windows too old to be taken again anyway.
func (f *Feed) prune(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, t := range f.seen {
		if now.Sub(t) > f.cfg.MaxAge+time.Duration(MaxSeconds)*time.Second {
			delete(f.seen, k)
		}
	}
}

// Result is what POST /v1/feed answers.
type Result struct {
	Accepted int `json:"accepted"`
	Replayed int `json:"replayed"` // windows taken before: ignored
	Unplaced int `json:"unplaced"` // client networks gslb cannot place: ignored
}

// HTTPError is a refused request: its status and reason.
type HTTPError struct {
	Code   int
	Reason string
}

func (e *HTTPError) Error() string { return e.Reason }

func refuse(code int, format string, a ...any) error {
	return &HTTPError{Code: code, Reason: fmt.Sprintf(format, a...)}
}

// Ingest takes one request's body from source src: all of its rows, or
// none. A row on a node the source may not report on refuses the batch
// with 403, a bad row with 400 naming its index and field, a batch over
// the source's rate with 429; a window the feed took before is ignored
// and counted.
func (f *Feed) Ingest(ctx context.Context, src *Source, body []byte) (Result, error) {
	var res Result
	rows, err := Decode(body, f.cfg.MaxRows)
	if err != nil {
		if errors.Is(err, ErrTooManyRows) {
			rowsTotal.WithLabelValues(src.Name, "too_many_rows").Inc()
			return res, refuse(http.StatusRequestEntityTooLarge, "%v", err)
		}
		rowsTotal.WithLabelValues(src.Name, "invalid").Inc()
		return res, refuse(http.StatusBadRequest, "%v", err)
	}
	n := float64(len(rows))
	for i := range rows {
		if node := strings.TrimSpace(rows[i].Node); !src.Allows(node) {
			rowsTotal.WithLabelValues(src.Name, "foreign").Add(n)
			return res, refuse(http.StatusForbidden, "row %d: field node: source %s may not report on %q: nothing was stored", i, src.Name, node)
		}
	}
	t := f.table.Load()
	if t == nil {
		return res, refuse(http.StatusServiceUnavailable, "no node table yet: retry")
	}
	known := func(id string) bool { _, ok := t.Index(id); return ok }
	now := f.now()
	checked := make([]Row, len(rows))
	for i := range rows {
		r, err := rows[i].Check(i, known, now, f.cfg.MaxAge)
		if err != nil {
			rowsTotal.WithLabelValues(src.Name, "invalid").Add(n)
			return res, refuse(http.StatusBadRequest, "%v: nothing was stored", err)
		}
		checked[i] = r
	}
	if !f.buckets[src.Name].take(n, now) {
		rowsTotal.WithLabelValues(src.Name, "rate_limited").Add(n)
		return res, refuse(http.StatusTooManyRequests, "source %s is over its rate of %g rows/s: nothing was stored", src.Name, src.Rate)
	}
	var shared []Placed
	for i := range checked {
		r := &checked[i]
		if r.Client.IsValid() {
			r.Province, r.ISP = f.place(ctx, r.Client)
			if r.Province == "" && r.ISP == "" {
				res.Unplaced++
				continue
			}
		}
		if !f.first(src.Name, rows[i].Edge, r) {
			res.Replayed++
			continue
		}
		f.fold.Add(Key{Province: r.Province, ISP: r.ISP, Node: r.Node}, r, src.Name)
		f.observe(r, src.Name)
		res.Accepted++
		if f.Share != nil {
			shared = append(shared, placed(r, src.Name))
		}
	}
	if len(shared) > 0 {
		f.Share(shared)
	}
	rowsTotal.WithLabelValues(src.Name, "accepted").Add(float64(res.Accepted))
	rowsTotal.WithLabelValues(src.Name, "replayed").Add(float64(res.Replayed))
	rowsTotal.WithLabelValues(src.Name, "unplaced").Add(float64(res.Unplaced))
	return res, nil
}

// first records r's window and reports whether it is later than every
// window taken for its sender, edge, node and clients.
func (f *Feed) first(source, edge string, r *Row) bool {
	k := replayKey{source: source, edge: edge, node: r.Node, client: r.Client, province: r.Province, isp: r.ISP}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.seen[k]; ok && !r.Start.After(last) {
		return false
	}
	f.seen[k] = r.Start
	return true
}

// ServeHTTP is POST /v1/feed: the bearer token names the source.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	src := sourceOf(f.cfg.Sources, strings.TrimSpace(tok))
	if !strings.EqualFold(scheme, "Bearer") || src == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gslb feed"`)
		requestsTotal.WithLabelValues("", "401").Inc()
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a feed source's bearer token is required"})
		return
	}
	res, err := f.serve(r, src)
	code := http.StatusOK
	if he := (*HTTPError)(nil); errors.As(err, &he) {
		code = he.Code
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		requestsTotal.WithLabelValues(src.Name, strconv.Itoa(code)).Inc()
		writeJSON(w, code, map[string]string{"error": he.Reason})
		return
	}
	requestsTotal.WithLabelValues(src.Name, strconv.Itoa(code)).Inc()
	writeJSON(w, code, res)
}

func (f *Feed) serve(r *http.Request, src *Source) (Result, error) {
	// Refused before a byte of the body is read when it says it is too
	// large, and cut off when it grows past the limit.
	if r.ContentLength > f.cfg.MaxBody {
		rowsTotal.WithLabelValues(src.Name, "too_large").Inc()
		return Result{}, refuse(http.StatusRequestEntityTooLarge, "the body of %d bytes is over the limit of %d", r.ContentLength, f.cfg.MaxBody)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, f.cfg.MaxBody+1))
	if err != nil {
		return Result{}, refuse(http.StatusBadRequest, "body: %v", err)
	}
	if int64(len(body)) > f.cfg.MaxBody {
		rowsTotal.WithLabelValues(src.Name, "too_large").Inc()
		return Result{}, refuse(http.StatusRequestEntityTooLarge, "the body is over the limit of %d bytes", f.cfg.MaxBody)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	return f.Ingest(ctx, src, body)
}

// CellsJSON is GET /v1/feed.
type CellsJSON struct {
	At    time.Time      `json:"at"`
	Count map[string]int `json:"count"`
	Cells []Cell         `json:"cells"`
}

// JSON is the cells as GET /v1/feed shows them.
func (c *Cells) JSON() CellsJSON {
	cells := c.Cells
	if cells == nil {
		cells = []Cell{}
	}
	return CellsJSON{At: c.At, Count: c.Count, Cells: cells}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ") // as the admin API's other answers
	enc.Encode(v)
}
