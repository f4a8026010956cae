// Package edgeagent is gslb feed, the agent beside an edge's nginx: it
// tails the access log, aggregates what the node served per client
// network and interval, and delivers the rows to gslb's POST /v1/feed,
// through a bounded spool while gslb is unreachable.
package edgeagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Log formats the agent reads.
const (
	FormatJSON     = "json"
	FormatCombined = "combined"
)

// LogFormatJSON and LogFormatCombined are the nginx log_format lines the
// formats expect, to paste into the http block.
const (
	LogFormatJSON     = `log_format gslb_json escape=json '{"remote_addr":"$remote_addr","status":"$status","body_bytes_sent":"$body_bytes_sent","request_time":"$request_time","upstream_response_time":"$upstream_response_time","upstream_cache_status":"$upstream_cache_status","host":"$host"}';`
	LogFormatCombined = `log_format gslb_combined '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time $upstream_cache_status';`
)

// Entry is what one log line says.
type Entry struct {
	Addr   netip.Addr
	Status int
	Bytes  float64
	TTFBMs float64 // the upstream's time when it answered, else the request's
	Hit    bool    // served from the cache
	Host   string  // the request's host, lower case; "" when the format has none
}

// ParseLine reads one line of format.
func ParseLine(format string, line []byte) (Entry, error) {
	switch format {
	case FormatJSON:
		return parseJSON(line)
	case FormatCombined:
		return parseCombined(string(line))
	}
	return Entry{}, fmt.Errorf("unknown format %q", format)
}

type jsonLine struct {
	RemoteAddr   string `json:"remote_addr"`
	Status       string `json:"status"`
	Bytes        string `json:"body_bytes_sent"`
	RequestTime  string `json:"request_time"`
	UpstreamTime string `json:"upstream_response_time"`
	CacheStatus  string `json:"upstream_cache_status"`
	Host         string `json:"host"`
}

func parseJSON(line []byte) (Entry, error) {
	var j jsonLine
	if err := json.Unmarshal(bytes.TrimSpace(line), &j); err != nil {
		return Entry{}, err
	}
	e, err := entry(j.RemoteAddr, j.Status, j.Bytes, j.RequestTime, j.UpstreamTime, j.CacheStatus)
	e.Host = strings.ToLower(strings.TrimSuffix(j.Host, "."))
	return e, err
}

// parseCombined reads the combined format and, after the user agent,
// $request_time $upstream_response_time $upstream_cache_status (the
// upstream times may be a list: "0.010, 0.004").
func parseCombined(line string) (Entry, error) {
	addr, rest, ok := strings.Cut(line, " ")
	if !ok {
		return Entry{}, errors.New("no remote address")
	}
	// "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" ...
	q := strings.IndexByte(rest, '"')
	if q < 0 {
		return Entry{}, errors.New("no request")
	}
	end := closingQuote(rest, q+1)
	if end < 0 {
		return Entry{}, errors.New("no end of the request")
	}
	f := strings.Fields(rest[end+1:])
	if len(f) < 2 {
		return Entry{}, errors.New("no status and bytes")
	}
	status, size := f[0], f[1]
	// The referer and the user agent, then our three fields.
	tail := rest[end+1:]
	for _, name := range []string{"referer", "user agent"} {
		i := strings.IndexByte(tail, '"')
		j := -1
		if i >= 0 {
			j = closingQuote(tail, i+1)
		}
		if j < 0 {
			return Entry{}, fmt.Errorf("no quoted %s", name)
		}
		tail = tail[j+1:]
	}
	extra := strings.Fields(tail)
	if len(extra) < 3 {
		return Entry{}, errors.New("no $request_time $upstream_response_time $upstream_cache_status after the user agent")
	}
	return entry(addr, status, size, extra[0], strings.Join(extra[1:len(extra)-1], " "), extra[len(extra)-1])
}

// closingQuote is the index of the quote closing a string that starts at
// from, past escaped quotes; -1 without one.
func closingQuote(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func entry(addr, status, size, reqTime, upTime, cache string) (Entry, error) {
	var e Entry
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil {
		return e, fmt.Errorf("remote_addr %q: not an address", addr)
	}
	e.Addr = a.Unmap()
	if e.Status, err = strconv.Atoi(status); err != nil || e.Status < 100 || e.Status > 999 {
		return e, fmt.Errorf("status %q: not an HTTP status", status)
	}
	if size != "-" && size != "" {
		n, err := strconv.ParseFloat(size, 64)
		if err != nil || n < 0 {
			return e, fmt.Errorf("body_bytes_sent %q: not a size", size)
		}
		e.Bytes = n
	}
	rt, err := strconv.ParseFloat(reqTime, 64)
	if err != nil || rt < 0 {
		return e, fmt.Errorf("request_time %q: not a time", reqTime)
	}
	e.TTFBMs = rt * 1000
	// Several upstreams tried in turn: the client waited for all.
	if up, ok := sumTimes(upTime); ok {
		e.TTFBMs = up * 1000
	}
	switch strings.ToUpper(strings.TrimSpace(cache)) {
	case "HIT", "STALE", "UPDATING", "REVALIDATED":
		e.Hit = true
	}
	return e, nil
}

// sumTimes adds "0.010, 0.004 : 0.002"; false for "-", "" or garbage.
func sumTimes(s string) (float64, bool) {
	sum, any := 0.0, false
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ':' || r == ' ' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 {
			continue // "-": an upstream that did not answer
		}
		sum, any = sum+v, true
	}
	return sum, any
}
