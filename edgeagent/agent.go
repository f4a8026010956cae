package edgeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/resolvers"
)

// Config is the agent's flags.
type Config struct {
	Log, Format    string
	URL, TokenFile string
	Node, Edge     string
	Interval       time.Duration
	OffsetFile     string
	SpoolDir       string
	SpoolMax       int64
	Timeout        time.Duration
	MaxBackoff     time.Duration
	FromStart      bool // a first run reads the log from its start
	MaxRows        int  // per request
	// Beacon is the beacon name of the resolvers block ("" none): a fetch
	// of LABEL.Beacon is reported to BeaconURL as (label, client /24).
	Beacon, BeaconURL string
	// Out receives the summary line of each interval.
	Out io.Writer
}

// Agent tails, aggregates and delivers.
type Agent struct {
	cfg    Config
	token  string
	tail   *tailer
	spool  spool
	seq    uint64
	client *http.Client
	agg    map[netip.Prefix]*cell
	since  time.Time // the window's start
	// delivery's backoff
	failures int
	retryAt  time.Time
	// the interval's beacon fetches, posted once at its end
	beacons []resolvers.Report
	// the interval's figures for the summary
	lines, skipped, nrows, delivered, deliveredRows, dropped, rejected, nbeacons int
}

type cell struct {
	requests, errors, hits, bytes float64
	hist                          map[int]float64
}

// offsetState is the offset file.
type offsetState struct {
	Position
	Seq uint64 `json:"seq"`
}

// New opens the log where the offset file (or the newest spooled batch)
// says the last run stopped.
func New(cfg Config) (*Agent, error) {
	tok, err := os.ReadFile(cfg.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("token_file: %w", err)
	}
	if err := os.MkdirAll(cfg.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	a := &Agent{cfg: cfg, token: strings.TrimSpace(string(tok)), spool: spool{dir: cfg.SpoolDir, max: cfg.SpoolMax},
		client: &http.Client{Timeout: cfg.Timeout}, agg: map[netip.Prefix]*cell{}}
	var st offsetState
	data, err := os.ReadFile(cfg.OffsetFile)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("offset file %s: %w", cfg.OffsetFile, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("offset file: %w", err)
	}
	// A batch spooled after the offset file was last written says where
	// the log was read to.
	bs, err := a.spool.list()
	if err != nil {
		return nil, err
	}
	if n := len(bs); n > 0 && bs[n-1].seq > st.Seq {
		st = offsetState{Position: bs[n-1].pos, Seq: bs[n-1].seq}
	}
	a.seq = st.Seq
	t, err := openTail(cfg.Log, st.Position, !cfg.FromStart)
	if err != nil {
		return nil, err
	}
	a.tail = t
	a.since = time.Now()
	return a, a.saveOffset()
}

// Run reads, aggregates and delivers every interval until ctx ends; it
// delivers what it read before it returns, when gslb answers.
func (a *Agent) Run(ctx context.Context) error {
	defer a.tail.close()
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			err := a.cycle(time.Now())
			a.deliver(context.Background())
			a.sendBeacons(context.Background())
			return err
		case now := <-t.C:
			if err := a.cycle(now); err != nil {
				fmt.Fprintf(a.cfg.Out, "gslb feed: %v\n", err)
			}
			a.deliver(ctx)
			a.sendBeacons(ctx)
			a.summary()
		}
	}
}

// cycle reads what the log got, and spools the window's rows with the
// position after them.
func (a *Agent) cycle(now time.Time) error {
	err := a.tail.read(a.line)
	if len(a.agg) == 0 {
		a.since = now
		if err != nil {
			return err
		}
		return a.saveOffset()
	}
	body := a.rows(now)
	a.seq++
	if perr := a.spool.put(a.seq, a.tail.pos, body); perr != nil {
		a.seq--
		return errors.Join(err, fmt.Errorf("spool: %w", perr))
	}
	a.agg, a.since = map[netip.Prefix]*cell{}, now
	return errors.Join(err, a.saveOffset())
}

func (a *Agent) line(l []byte) {
	a.lines++
	e, err := ParseLine(a.cfg.Format, l)
	if err != nil {
		a.skipped++
		return
	}
	p, _ := feed.ParseClient(e.Addr.String())
	c := a.agg[p]
	if c == nil {
		c = &cell{hist: map[int]float64{}}
		a.agg[p] = c
	}
	c.requests++
	c.bytes += e.Bytes
	if e.Status >= 500 {
		c.errors++
	} else {
		c.hist[feed.BucketOf(e.TTFBMs)]++
	}
	if e.Hit {
		c.hits++
	}
	if a.cfg.Beacon != "" && e.Status < 400 {
		if label, ok := strings.CutSuffix(e.Host, "."+a.cfg.Beacon); ok && label != "" && !strings.Contains(label, ".") && len(a.beacons) < maxBeacons {
			a.beacons = append(a.beacons, resolvers.Report{Label: label, Client: p.String(), At: time.Now().UTC().Format(time.RFC3339)})
		}
	}
}

// maxBeacons bounds the beacon fetches an interval keeps: a log can name
// any number of hosts, and gslb takes at most SourceJoins a resolver.
const maxBeacons = 10 * resolvers.MaxReports

// sendBeacons posts the interval's beacon fetches, once, in batches the
// server takes: a fetch reported
// later than the window after its query would not count anyway.
func (a *Agent) sendBeacons(ctx context.Context) {
	if len(a.beacons) == 0 {
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range a.beacons {
		enc.Encode(&a.beacons[i])
	}
	n := len(a.beacons)
	a.beacons = a.beacons[:0]
	code, msg, err := a.postChunks(ctx, a.cfg.BeaconURL, b.Bytes(), min(a.cfg.MaxRows, resolvers.MaxReports))
	if err == nil && code/100 != 2 {
		err = fmt.Errorf("status %d: %s", code, strings.TrimSpace(msg))
	}
	if err != nil {
		fmt.Fprintf(a.cfg.Out, "gslb feed: %d beacon fetches not reported: %v\n", n, err)
		return
	}
	a.nbeacons += n
}

// rows is the window's rows as NDJSON, one per client network.
func (a *Agent) rows(now time.Time) []byte {
	secs := max(now.Sub(a.since).Seconds(), 0.001)
	nets := make([]netip.Prefix, 0, len(a.agg))
	for p := range a.agg {
		nets = append(nets, p)
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].Addr().Less(nets[j].Addr()) })
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, p := range nets {
		c := a.agg[p]
		req, hits := c.requests, c.hits
		r := feed.RowJSON{Node: a.cfg.Node, Edge: a.cfg.Edge, Start: a.since.UTC().Format(time.RFC3339Nano), Seconds: secs,
			Client: p.String(), Requests: &req, Errors: c.errors, Hits: &hits, Bytes: c.bytes}
		ks := make([]int, 0, len(c.hist))
		for k := range c.hist {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		for _, k := range ks {
			r.TTFBHist = append(r.TTFBHist, [2]float64{feed.Bound(k), c.hist[k]})
		}
		enc.Encode(&r)
		a.nrows++
	}
	return b.Bytes()
}

func (a *Agent) saveOffset() error {
	data, _ := json.Marshal(offsetState{Position: a.tail.pos, Seq: a.seq})
	return atomicfile.WriteBytesMode(a.cfg.OffsetFile, 0o600, data)
}

// deliver posts the spooled batches, oldest first, until one fails: then
// it backs off, doubling up to MaxBackoff. A batch gslb refuses for good
// (400, 403, 413) is dropped with a line: sending it again cannot help.
func (a *Agent) deliver(ctx context.Context) {
	if time.Now().Before(a.retryAt) {
		return
	}
	bs, err := a.spool.list()
	if err != nil {
		fmt.Fprintf(a.cfg.Out, "gslb feed: spool: %v\n", err)
		return
	}
	bs, dropped := a.spool.trim(bs)
	a.dropped += dropped
	for _, b := range bs {
		body, err := os.ReadFile(b.path)
		if err != nil {
			continue
		}
		code, msg, err := a.postChunks(ctx, a.cfg.URL, body, a.cfg.MaxRows)
		switch {
		case err == nil && code/100 == 2:
			os.Remove(b.path)
			a.delivered++
			a.deliveredRows += bytes.Count(body, []byte{'\n'})
			a.failures, a.retryAt = 0, time.Time{}
			continue
		case err == nil && (code == 400 || code == 403 || code == 413):
			fmt.Fprintf(a.cfg.Out, "gslb feed: batch %d refused (%d): %s\n", b.seq, code, strings.TrimSpace(msg))
			os.Remove(b.path)
			a.rejected++
			continue
		}
		a.failures++
		wait := min(time.Second<<min(a.failures-1, 16), a.cfg.MaxBackoff)
		a.retryAt = time.Now().Add(wait)
		if err == nil {
			err = fmt.Errorf("status %d: %s", code, strings.TrimSpace(msg))
		}
		fmt.Fprintf(a.cfg.Out, "gslb feed: delivery failed, retry in %s: %v\n", wait, err)
		return
	}
}

// postChunks posts a batch to url in requests of at most maxLines lines.
// After a failure the whole batch is posted again: gslb ignores the
// windows (and beacon labels) it took already, so each counts once.
func (a *Agent) postChunks(ctx context.Context, url string, body []byte, maxLines int) (int, string, error) {
	code, msg := 0, ""
	for len(body) > 0 {
		end, n := 0, 0
		for end < len(body) && n < maxLines {
			i := bytes.IndexByte(body[end:], '\n')
			if i < 0 {
				end = len(body)
				break
			}
			end += i + 1
			n++
		}
		var err error
		code, msg, err = a.postTo(ctx, url, body[:end])
		if err != nil || code/100 != 2 {
			return code, msg, err
		}
		body = body[end:]
	}
	return code, msg, nil
}

func (a *Agent) postTo(ctx context.Context, url string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(msg), nil
}

// summary prints the interval's line and starts the next one's figures.
func (a *Agent) summary() {
	bs, _ := a.spool.list()
	size := int64(0)
	for _, b := range bs {
		size += b.size
	}
	retry := "-"
	if !a.retryAt.IsZero() {
		retry = time.Until(a.retryAt).Round(time.Second).String()
	}
	beacons := ""
	if a.cfg.Beacon != "" {
		beacons = fmt.Sprintf("; beacons %d", a.nbeacons)
	}
	fmt.Fprintf(a.cfg.Out, "gslb feed: %d lines (%d unparsed), %d rows; delivered %d batches (%d rows), refused %d, dropped %d; spool %d batches %d bytes; retry %s%s\n",
		a.lines, a.skipped, a.nrows, a.delivered, a.deliveredRows, a.rejected, a.dropped, len(bs), size, retry, beacons)
	a.lines, a.skipped, a.nrows, a.delivered, a.deliveredRows, a.rejected, a.dropped, a.nbeacons = 0, 0, 0, 0, 0, 0, 0, 0
}
