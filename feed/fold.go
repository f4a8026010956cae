package feed

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Key is a cell's place and node: a province and/or a carrier ("" for
// every one) and a node id.
type Key struct {
	Province string `json:"province,omitempty"`
	ISP      string `json:"isp,omitempty"`
	Node     string `json:"node"`
}

// Cell states.
const (
	Fresh = "fresh" // enough samples, recent: it counts
	Thin  = "thin"  // too few samples to count
	Stale = "stale" // no row for longer than the max age
)

// Cell is what the fold made of one (place, node): the published values
// (they move only past the hysteresis) and what is behind them.
type Cell struct {
	Key
	State      string    `json:"state"`
	Samples    float64   `json:"samples"` // requests, decayed by the half-life
	P50        float64   `json:"ttfb_p50_ms"`
	P95        float64   `json:"ttfb_p95_ms"`
	ErrorRatio float64   `json:"error_ratio"`
	HitRatio   float64   `json:"hit_ratio"` // -1: no row said
	Updated    time.Time `json:"updated"`   // the last fold that had rows for it
	Source     string    `json:"source"`    // of the last row
	// Recovered is when the error ratio fell back below max_error_rate
	// (zero: it did not, or was never above): the cell's clients come
	// back over the cooldown from then.
	Recovered time.Time `json:"recovered,omitzero"`
	Erroring  bool      `json:"erroring,omitempty"`
}

// Cells is one fold's outcome; immutable.
type Cells struct {
	At    time.Time
	Cells []Cell // sorted by province, carrier, node
	Count map[string]int
	// Places is the TTFB the clients of each place had from the nodes
	// they were sent to: the fresh cells' histograms merged.
	Places []PlaceTTFB
}

// PlaceTTFB is one place's TTFB over all its nodes.
type PlaceTTFB struct {
	Province, ISP string
	P50, P95      float64 // ms
	Samples       float64
}

// FoldConfig tunes the fold.
type FoldConfig struct {
	HalfLife     time.Duration // the weight of a row halves over it
	MaxAge       time.Duration // a cell without rows for longer is stale
	MinSamples   float64       // a cell with fewer (decayed) requests is thin
	Hysteresis   float64       // the published TTFB moves past this relative change only
	MaxErrorRate float64       // the error ratio that takes the node out for the cell's place
}

// acc is one cell's running sums.
type acc struct {
	hist           Hist
	req, errs      float64
	hits, hitReq   float64 // hits and the requests of rows that said
	updated        time.Time
	source         string
	pub50, pub95   float64 // published
	published      bool
	erroring       bool
	recovered      time.Time
	pendingRows    bool
	pending        Hist
	pReq, pErr     float64
	pHits, pHitReq float64
	pSource        string
	pLive          bool      // a row came in live: it is as new as the fold
	pAt            time.Time // else: when the newest pending row was taken
	lastFold       time.Time
}

// Fold keeps the cells: rows go into a pending part, and every cycle
// Fold decays what the cells hold and adds what is pending.
type Fold struct {
	cfg   FoldConfig
	mu    sync.Mutex
	cells map[Key]*acc
}

// NewFold returns an empty fold.
func NewFold(cfg FoldConfig) *Fold {
	return &Fold{cfg: cfg, cells: map[Key]*acc{}}
}

// setConfig retunes the fold: a reloaded Corefile's feed block.
func (f *Fold) setConfig(cfg FoldConfig) {
	f.mu.Lock()
	f.cfg = cfg
	f.mu.Unlock()
}

// Add puts a validated, placed row into the next fold.
func (f *Fold) Add(k Key, r *Row, source string) { f.addAt(k, r, source, time.Time{}) }

// addAt puts a row another member took at at (zero: a live row) into the
// next fold.
func (f *Fold) addAt(k Key, r *Row, source string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.cells[k]
	if a == nil {
		a = &acc{}
		f.cells[k] = a
	}
	a.add(r, source)
	switch {
	case at.IsZero():
		a.pLive = true
	case at.After(a.pAt):
		a.pAt = at
	}
}

func (a *acc) add(r *Row, source string) {
	for _, b := range r.hist {
		a.pending[b.k] += b.n
	}
	a.pReq += r.Requests
	a.pErr += r.Errors
	if r.HasHits {
		a.pHits += r.Hits
		a.pHitReq += r.Requests
	}
	a.pSource = source
	a.pendingRows = true
}

// Fold runs one cycle at now and returns the cells.
func (f *Fold) Fold(now time.Time) *Cells {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &Cells{At: now, Cells: make([]Cell, 0, len(f.cells)), Count: map[string]int{Fresh: 0, Thin: 0, Stale: 0}}
	places := map[Key]*Hist{}
	for k, a := range f.cells {
		c, keep := f.fold(k, a, now)
		if !keep {
			delete(f.cells, k)
			continue
		}
		out.Cells = append(out.Cells, c)
		out.Count[c.State]++
		if c.State == Fresh {
			pk := Key{Province: k.Province, ISP: k.ISP}
			if places[pk] == nil {
				places[pk] = &Hist{}
			}
			places[pk].Add(&a.hist)
		}
	}
	sort.Slice(out.Cells, func(i, j int) bool { return less(out.Cells[i].Key, out.Cells[j].Key) })
	for k, h := range places {
		if n := h.Total(); n > 0 {
			out.Places = append(out.Places, PlaceTTFB{Province: k.Province, ISP: k.ISP, P50: h.Quantile(0.5), P95: h.Quantile(0.95), Samples: n})
		}
	}
	sort.Slice(out.Places, func(i, j int) bool {
		return less(Key{Province: out.Places[i].Province, ISP: out.Places[i].ISP}, Key{Province: out.Places[j].Province, ISP: out.Places[j].ISP})
	})
	return out
}

func less(a, b Key) bool {
	if a.Province != b.Province {
		return a.Province < b.Province
	}
	if a.ISP != b.ISP {
		return a.ISP < b.ISP
	}
	return a.Node < b.Node
}

// fold decays a cell by the time since its last fold, adds its pending
// rows and publishes; false: the cell is long stale, drop it.
func (f *Fold) fold(k Key, a *acc, now time.Time) (Cell, bool) {
	if !a.lastFold.IsZero() && f.cfg.HalfLife > 0 {
		d := math.Exp2(-now.Sub(a.lastFold).Seconds() / f.cfg.HalfLife.Seconds())
		a.hist.Scale(d)
		a.req, a.errs, a.hits, a.hitReq = a.req*d, a.errs*d, a.hits*d, a.hitReq*d
	}
	a.lastFold = now
	if a.pendingRows {
		a.hist.Add(&a.pending)
		a.pending = Hist{}
		a.req, a.errs, a.hits, a.hitReq = a.req+a.pReq, a.errs+a.pErr, a.hits+a.pHits, a.hitReq+a.pHitReq
		a.pReq, a.pErr, a.pHits, a.pHitReq = 0, 0, 0, 0
		a.source, a.updated, a.pendingRows = a.pSource, now, false
		if !a.pLive && a.pAt.Before(now) {
			a.updated = a.pAt
		}
		a.pLive, a.pAt = false, time.Time{}
	}
	c := Cell{Key: k, Samples: a.req, Updated: a.updated, Source: a.source, HitRatio: -1}
	age := now.Sub(a.updated)
	switch {
	case age > f.cfg.MaxAge:
		c.State = Stale
		if age > 2*f.cfg.MaxAge {
			return c, false
		}
	case a.req < f.cfg.MinSamples:
		c.State = Thin
	default:
		c.State = Fresh
	}
	if a.req > 0 {
		c.ErrorRatio = a.errs / a.req
	}
	if a.hitReq > 0 {
		c.HitRatio = a.hits / a.hitReq
	}
	if c.State == Fresh {
		f.publish(a, c.ErrorRatio, now)
	}
	c.P50, c.P95, c.Erroring, c.Recovered = a.pub50, a.pub95, a.erroring, a.recovered
	return c, true
}

// publish moves the published TTFB when it changed by more than the
// hysteresis, and the error state when the ratio crossed max_error_rate.
func (f *Fold) publish(a *acc, errRatio float64, now time.Time) {
	if a.hist.Total() > 0 {
		p50, p95 := a.hist.Quantile(0.5), a.hist.Quantile(0.95)
		if !a.published || math.Abs(p50-a.pub50) > f.cfg.Hysteresis*a.pub50 {
			a.pub50, a.pub95, a.published = p50, p95, true
		}
	}
	if f.cfg.MaxErrorRate <= 0 {
		return
	}
	switch above := errRatio >= f.cfg.MaxErrorRate; {
	case above:
		a.erroring, a.recovered = true, time.Time{}
	case a.erroring:
		a.erroring, a.recovered = false, now
	}
}
