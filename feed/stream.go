package feed

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// A fleet's members fold the same rows: the member a batch was posted to
// checks and places it, folds it, and shares it on the fleet's stream;
// every other member folds what it reads there. Placed holds what a row
// became: its cell and its sums.

// Placed is a checked, placed row as the stream carries it.
type Placed struct {
	Key
	Source   string       `json:"source"`
	Requests float64      `json:"requests"`
	Errors   float64      `json:"errors,omitempty"`
	Hits     *float64     `json:"hits,omitempty"`
	Hist     [][2]float64 `json:"hist,omitempty"` // [bucket, count]
	// The row's client network and window start, for the canary's
	// cohorts; absent for a place's row.
	Client string    `json:"client,omitempty"`
	Start  time.Time `json:"start,omitzero"`
}

// maxStreamRows bounds an entry read from the stream.
const maxStreamRows = 100000

// EncodePlaced is a batch for the stream.
func EncodePlaced(rows []Placed) ([]byte, error) { return json.Marshal(rows) }

// streamID is a Redis Stream entry's ID: milliseconds and a sequence.
type streamID struct{ ms, seq uint64 }

func parseStreamID(s string) (streamID, bool) {
	a, b, _ := strings.Cut(s, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID{ms, seq}, err1 == nil && err2 == nil
}

func (a streamID) after(b streamID) bool { return a.ms > b.ms || a.ms == b.ms && a.seq > b.seq }

// Run names the feed's state in the stream's entries: a member skips the
// batches it folded itself, and folds those of its own previous process.
func (f *Feed) Run() string { return f.state.run }

// StreamFrom is the stream entry to read after: the last one folded, or
// on a start, the first within max_age, so that a member that starts or
// comes back folds the rows the others still count.
func (f *Feed) StreamFrom() string {
	f.state.mu.Lock()
	defer f.state.mu.Unlock()
	if f.state.last != (streamID{}) {
		return fmt.Sprintf("%d-%d", f.state.last.ms, f.state.last.seq)
	}
	return fmt.Sprintf("%d-0", max(f.now().Add(-f.cfg.MaxAge).UnixMilli(), 0))
}

// AddEntry folds the stream entry id, a batch shared by the feed state
// run, unless it was folded before or is this state's own.
func (f *Feed) AddEntry(id, run string, data []byte) error {
	sid, ok := parseStreamID(id)
	if !ok {
		return fmt.Errorf("stream entry %q: not an entry ID", id)
	}
	f.state.mu.Lock()
	if !sid.after(f.state.last) {
		f.state.mu.Unlock()
		return nil
	}
	f.state.last = sid
	f.state.mu.Unlock()
	if run == f.state.run {
		return nil
	}
	return f.addEncoded(data, time.UnixMilli(int64(sid.ms)))
}

// AddEncoded folds a batch another member shared, after checking it: a
// stream entry is input like any other, and all or nothing.
func (f *Feed) AddEncoded(data []byte) error { return f.addEncoded(data, time.Time{}) }

// addEncoded is AddEncoded of a batch taken at at (zero: now); the older
// it is, the more it has decayed.
func (f *Feed) addEncoded(data []byte, at time.Time) error {
	var rows []Placed
	err := json.Unmarshal(data, &rows)
	if err != nil {
		return fmt.Errorf("stream entry: %w", err)
	}
	if len(rows) > maxStreamRows {
		return fmt.Errorf("stream entry: %d rows, at most %d", len(rows), maxStreamRows)
	}
	t := f.table.Load()
	type add struct {
		k      Key
		r      Row
		source string
	}
	adds := make([]add, 0, len(rows))
	for i := range rows {
		p := &rows[i]
		if t != nil {
			if _, ok := t.Index(p.Node); !ok {
				continue // a node this member's table does not have
			}
		}
		r := Row{Node: p.Node, Province: p.Province, ISP: p.ISP, Requests: p.Requests, Errors: p.Errors, Start: p.Start}
		if p.Client != "" {
			if r.Client, err = netip.ParsePrefix(p.Client); err != nil {
				return fmt.Errorf("stream entry: row %d: client: %w", i, err)
			}
		}
		if p.Hits != nil {
			r.Hits, r.HasHits = *p.Hits, true
		}
		ok := finite(r.Requests) && r.Requests >= 0 && r.Requests <= MaxCount && finite(r.Errors) && r.Errors >= 0 && r.Errors <= r.Requests &&
			(!r.HasHits || finite(r.Hits) && r.Hits >= 0 && r.Hits <= r.Requests)
		for _, b := range p.Hist {
			k := int(b[0])
			if float64(k) != b[0] || k < 0 || k >= NumBuckets || !finite(b[1]) || b[1] < 0 || b[1] > MaxCount {
				ok = false
				break
			}
			r.hist = append(r.hist, bucketCount{k, b[1]})
		}
		if !ok {
			return fmt.Errorf("stream entry: row %d: a value out of bounds: the entry is ignored", i)
		}
		adds = append(adds, add{p.Key, r, p.Source})
	}
	for i := range adds {
		f.observe(&adds[i].r, adds[i].source)
	}
	d := 1.0
	if age := f.now().Sub(at); !at.IsZero() && age > 0 && f.cfg.HalfLife > 0 {
		d = math.Exp2(-age.Seconds() / f.cfg.HalfLife.Seconds())
	}
	for i := range adds {
		r := &adds[i].r
		r.Requests, r.Errors, r.Hits = r.Requests*d, r.Errors*d, r.Hits*d
		for j := range r.hist {
			r.hist[j].n *= d
		}
		f.fold.addAt(adds[i].k, r, adds[i].source, at)
	}
	return nil
}

// placed is r as the stream carries it.
func placed(r *Row, source string) Placed {
	p := Placed{Key: Key{Province: r.Province, ISP: r.ISP, Node: r.Node}, Source: source, Requests: r.Requests, Errors: r.Errors, Start: r.Start}
	if r.Client.IsValid() {
		p.Client = r.Client.String()
	}
	if r.HasHits {
		h := r.Hits
		p.Hits = &h
	}
	for _, b := range r.hist {
		p.Hist = append(p.Hist, [2]float64{float64(b.k), b.n})
	}
	return p
}
