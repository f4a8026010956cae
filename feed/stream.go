package feed

import (
	"encoding/json"
	"fmt"
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
}

// maxStreamRows bounds an entry read from the stream.
const maxStreamRows = 100000

// EncodePlaced is a batch for the stream.
func EncodePlaced(rows []Placed) ([]byte, error) { return json.Marshal(rows) }

// AddEncoded folds a batch another member shared, after checking it: a
// stream entry is input like any other, and all or nothing.
func (f *Feed) AddEncoded(data []byte) error {
	var rows []Placed
	if err := json.Unmarshal(data, &rows); err != nil {
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
		r := Row{Node: p.Node, Province: p.Province, ISP: p.ISP, Requests: p.Requests, Errors: p.Errors}
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
		f.fold.Add(adds[i].k, &adds[i].r, adds[i].source)
	}
	return nil
}

// placed is r as the stream carries it.
func placed(r *Row, source string) Placed {
	p := Placed{Key: Key{Province: r.Province, ISP: r.ISP, Node: r.Node}, Source: source, Requests: r.Requests, Errors: r.Errors}
	if r.HasHits {
		h := r.Hits
		p.Hits = &h
	}
	for _, b := range r.hist {
		p.Hist = append(p.Hist, [2]float64{float64(b.k), b.n})
	}
	return p
}
