// Package feed is the data loop's centre: the rows edges send about what
// they served (requests, TTFB, errors, cache hits per node and client
// place), their validation, the sources allowed to send them, and the fold
// that turns them every cycle into cells per (place, node) that decisions
// read.
package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/scoring"
)

// RowJSON is one row as an edge sends it: what one node served to one
// client network or place over one window.
type RowJSON struct {
	Node string `json:"node"`
	// Edge names the sending host when several send for one node: a
	// window repeats only from the same edge.
	Edge string `json:"edge,omitempty"`
	// Start is the window's start (RFC 3339), Seconds its length.
	Start   string  `json:"start"`
	Seconds float64 `json:"seconds"`
	// The clients: a network (an address is its /24 or /48), which gslb
	// places with its own locator, or a province and/or a carrier.
	Client   string `json:"client,omitempty"`
	Province string `json:"province,omitempty"`
	ISP      string `json:"isp,omitempty"`

	Requests *float64 `json:"requests"`
	Errors   float64  `json:"errors,omitempty"` // 5xx answers
	Hits     *float64 `json:"hits,omitempty"`   // cache hits; absent: unknown
	Bytes    float64  `json:"bytes,omitempty"`
	// The TTFB: a histogram of [milliseconds, count] pairs (preferred:
	// histograms merge), or its p50 and p95.
	TTFBHist [][2]float64 `json:"ttfb_hist,omitempty"`
	TTFBP50  *float64     `json:"ttfb_p50_ms,omitempty"`
	TTFBP95  *float64     `json:"ttfb_p95_ms,omitempty"`
}

// Row is a validated row.
type Row struct {
	Node          string
	Start         time.Time
	Seconds       float64
	Client        netip.Prefix // valid: place it with the locator
	Province, ISP string
	Requests      float64
	Errors        float64
	Hits          float64
	HasHits       bool
	Bytes         float64
	hist          []bucketCount // sparse TTFB histogram
}

type bucketCount struct {
	k int
	n float64
}

// Bounds of a row's values: a row is one window of one node's clients.
const (
	MaxCount     = 1e12
	MaxTTFBMs    = 600_000
	MaxSeconds   = 3600
	MaxHistPairs = NumBuckets
	clockSkew    = 30 * time.Second // a window may end this far in our future
	ipv4Unit     = 24
	ipv6Unit     = 48
)

// RowError names the bad row by its index (from 0, in the body's order)
// and the field.
type RowError struct {
	Index int
	Field string
	Err   error
}

func (e *RowError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("row %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("row %d: field %s: %v", e.Index, e.Field, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// ErrTooManyRows: a body holds more rows than a request may.
var ErrTooManyRows = errors.New("too many rows")

// Decode reads a body of rows: a JSON array, or one JSON object per line
// (NDJSON). It stops at maxRows+1 rows with ErrTooManyRows. Unknown fields
// are errors: a misspelt field must not pass as a missing one.
func Decode(body []byte, maxRows int) ([]RowJSON, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return decodeLines(trimmed, maxRows)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var rows []RowJSON
	next := func() error {
		if len(rows) >= maxRows {
			return fmt.Errorf("%w: more than %d in one request", ErrTooManyRows, maxRows)
		}
		var r RowJSON
		if err := dec.Decode(&r); err != nil {
			return decodeError(len(rows), err)
		}
		rows = append(rows, r)
		return nil
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		if err := next(); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, &RowError{Index: len(rows), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more after the JSON array")
	}
	return rows, nil
}

// decodeLines reads concatenated JSON objects (NDJSON).
func decodeLines(body []byte, maxRows int) ([]RowJSON, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	rows := make([]RowJSON, 0, min(bytes.Count(body, []byte{'\n'})+1, maxRows))
	for {
		rows = append(rows, RowJSON{})
		err := dec.Decode(&rows[len(rows)-1])
		if err == io.EOF {
			return rows[:len(rows)-1], nil
		}
		if len(rows) > maxRows {
			return nil, fmt.Errorf("%w: more than %d in one request", ErrTooManyRows, maxRows)
		}
		if err != nil {
			return nil, decodeError(len(rows)-1, err)
		}
	}
}

// rowFields are RowJSON's keys, for the hint of a misspelt one.
var rowFields = []string{"node", "edge", "start", "seconds", "client", "province", "isp", "requests",
	"errors", "hits", "bytes", "ttfb_hist", "ttfb_p50_ms", "ttfb_p95_ms"}

// decodeError names the field of a JSON type error or an unknown key in
// the row's own words, not the decoder's Go types.
func decodeError(i int, err error) *RowError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := "a number"
		switch te.Type.Kind() {
		case reflect.String:
			want = "a string"
		case reflect.Slice, reflect.Array:
			want = "a list of [milliseconds, count] pairs"
		}
		return &RowError{Index: i, Field: te.Field, Err: fmt.Errorf("want %s, got a JSON %s", want, te.Value)}
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		k = strings.Trim(k, `"`)
		return &RowError{Index: i, Field: k, Err: fmt.Errorf("unknown field%s", suggest.Hint(k, rowFields))}
	}
	return &RowError{Index: i, Err: err}
}

// Check validates row i against the node table (known), the clock and the
// oldest window accepted.
func (y *RowJSON) Check(i int, known func(string) bool, now time.Time, maxAge time.Duration) (Row, error) {
	bad := func(field, format string, a ...any) (Row, error) {
		return Row{}, &RowError{Index: i, Field: field, Err: fmt.Errorf(format, a...)}
	}
	r := Row{Node: strings.TrimSpace(y.Node), Seconds: y.Seconds, Errors: y.Errors, Bytes: y.Bytes}
	switch {
	case r.Node == "":
		return bad("node", "missing")
	case !known(r.Node):
		return bad("node", "%q is not in the node table", r.Node)
	}
	start, err := time.Parse(time.RFC3339Nano, y.Start)
	if err != nil {
		return bad("start", "%q is not an RFC 3339 time", y.Start)
	}
	r.Start = start
	if !finite(y.Seconds) || y.Seconds <= 0 || y.Seconds > MaxSeconds {
		return bad("seconds", "%v is not a window length in (0, %d] seconds", y.Seconds, MaxSeconds)
	}
	end := start.Add(time.Duration(y.Seconds * float64(time.Second)))
	if end.After(now.Add(clockSkew)) {
		return bad("start", "the window ends at %s, in the future (now %s)", end.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if now.Sub(end) > maxAge {
		return bad("start", "the window ended at %s, more than the max age %s ago", end.UTC().Format(time.RFC3339), maxAge)
	}
	if err := y.place(&r); err != nil {
		return Row{}, &RowError{Index: i, Field: err.field, Err: err.err}
	}
	if y.Requests == nil {
		return bad("requests", "missing")
	}
	r.Requests = *y.Requests
	for _, f := range []struct {
		name string
		v    float64
	}{{"requests", r.Requests}, {"errors", r.Errors}, {"bytes", r.Bytes}} {
		if !finite(f.v) || f.v < 0 || f.v > MaxCount {
			return bad(f.name, "%v is not a count in 0..%g", f.v, float64(MaxCount))
		}
	}
	if r.Errors > r.Requests {
		return bad("errors", "%v errors of %v requests", r.Errors, r.Requests)
	}
	if y.Hits != nil {
		if h := *y.Hits; !finite(h) || h < 0 || h > r.Requests {
			return bad("hits", "%v is not a count in 0..requests (%v)", h, r.Requests)
		}
		r.Hits, r.HasHits = *y.Hits, true
	}
	if err := y.ttfb(&r); err != nil {
		return Row{}, &RowError{Index: i, Field: err.field, Err: err.err}
	}
	return r, nil
}

type fieldErr struct {
	field string
	err   error
}

func fieldf(field, format string, a ...any) *fieldErr {
	return &fieldErr{field, fmt.Errorf(format, a...)}
}

// place reads the clients: a network, or a province and/or a carrier.
func (y *RowJSON) place(r *Row) *fieldErr {
	if y.Client != "" {
		if y.Province != "" || y.ISP != "" {
			return fieldf("client", "give a client network or a province and carrier, not both")
		}
		p, err := ParseClient(y.Client)
		if err != nil {
			return fieldf("client", "%v", err)
		}
		r.Client = p
		return nil
	}
	if y.Province == "" && y.ISP == "" {
		return fieldf("client", "missing: a client network, or a province and/or a carrier")
	}
	if y.Province != "" {
		p, ok := geo.NormalizeProvince("CN", y.Province)
		if !ok {
			key, err := scoring.ParseProvinceKey(y.Province)
			if err != nil {
				return fieldf("province", "%v", err)
			}
			p = key.Province
		}
		r.Province = p
	}
	r.ISP = geo.NormalizeCarrier(y.ISP)
	return nil
}

// ParseClient reads a client network: a CIDR no more specific than the
// unit gslb decides for (/24, /48), or an address, which stands for its
// unit.
func ParseClient(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return p, fmt.Errorf("%q is not a network or an address", s)
		}
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	unit := ipv4Unit
	if p.Addr().Is6() && !p.Addr().Is4In6() {
		unit = ipv6Unit
	}
	if p.Bits() > unit {
		p = netip.PrefixFrom(p.Addr().Unmap(), unit)
	}
	return p.Masked(), nil
}

// ttfb reads the histogram or the quantiles.
func (y *RowJSON) ttfb(r *Row) *fieldErr {
	if len(y.TTFBHist) > 0 {
		if y.TTFBP50 != nil || y.TTFBP95 != nil {
			return fieldf("ttfb_hist", "give a histogram or ttfb_p50_ms and ttfb_p95_ms, not both")
		}
		if len(y.TTFBHist) > MaxHistPairs {
			return fieldf("ttfb_hist", "%d pairs, at most %d", len(y.TTFBHist), MaxHistPairs)
		}
		total := 0.0
		for j, pr := range y.TTFBHist {
			ms, n := pr[0], pr[1]
			if !finite(ms) || ms < 0 || ms > MaxTTFBMs {
				return fieldf(fmt.Sprintf("ttfb_hist[%d]", j), "%v is not a TTFB in 0..%d ms", ms, MaxTTFBMs)
			}
			if !finite(n) || n < 0 || n > MaxCount {
				return fieldf(fmt.Sprintf("ttfb_hist[%d]", j), "count %v is not in 0..%g", n, float64(MaxCount))
			}
			total += n
			r.hist = append(r.hist, bucketCount{BucketOf(ms), n})
		}
		if total > r.Requests {
			return fieldf("ttfb_hist", "holds %v requests, the row %v", total, r.Requests)
		}
		return nil
	}
	if y.TTFBP50 == nil && y.TTFBP95 == nil {
		return nil // errors and hits count without a TTFB
	}
	if y.TTFBP50 == nil || y.TTFBP95 == nil {
		return fieldf("ttfb_p50_ms", "give both ttfb_p50_ms and ttfb_p95_ms")
	}
	p50, p95 := *y.TTFBP50, *y.TTFBP95
	if !finite(p50) || p50 < 0 || p50 > MaxTTFBMs {
		return fieldf("ttfb_p50_ms", "%v is not a TTFB in 0..%d ms", p50, MaxTTFBMs)
	}
	if !finite(p95) || p95 < p50 || p95 > MaxTTFBMs {
		return fieldf("ttfb_p95_ms", "%v is not a TTFB in ttfb_p50_ms..%d ms", p95, MaxTTFBMs)
	}
	var h Hist
	h.addQuantiles(r.Requests-r.Errors, p50, p95)
	for k, n := range h {
		if n > 0 {
			r.hist = append(r.hist, bucketCount{k, n})
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Buckets calls f with each bucket of the row's TTFB histogram (its
// quantiles' shape when it sent only those) and its count, in the order
// the row has them (a bucket may come more than once).
func (r *Row) Buckets(f func(k int, n float64)) {
	for _, b := range r.hist {
		f(b.k, b.n)
	}
}
