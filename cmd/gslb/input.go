package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gslbdns/gslb/decide"

	dnstap "github.com/dnstap/golang-dnstap"
	framestream "github.com/farsightsec/golang-framestream"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"
)

// query is one query of a replay input.
type query struct {
	client decide.Client
	name   string // "" when the input does not say
	qtype  uint16
	count  int
	at     time.Time // a dnstap query's time; zero otherwise
}

// lineError is a malformed line (or dnstap frame) of an input.
type lineError struct {
	file string
	what string // "line" or "frame"
	n    int
	err  error
}

func (e *lineError) Error() string {
	if e.what == "frame" {
		return fmt.Sprintf("%s: frame %d: %v", e.file, e.n, e.err)
	}
	return fmt.Sprintf("%s:%d: %v", e.file, e.n, e.err)
}

// Input formats.
const (
	formatText   = "text"
	formatLog    = "log"
	formatDnstap = "dnstap"
)

// Limits on hostile input.
const (
	maxLine  = 1 << 20 // a longer line is reported and skipped
	maxCount = 1 << 40 // a text line's count
	maxFrame = 1 << 20 // framestream's own default bound
	sniff    = 64      // lines looked at to tell a log from a text file
)

// ignored counts what an input held that is not a gslb decision to replay.
type ignored struct {
	other    int // log lines of no query (startup, errors), or of a query gslb did not decide (client=-)
	dash     int // of other, the lines with client=-: every query's, when the block lacks metadata
	types    int // queries of another type than A, AAAA and HTTPS
	noQuery  int // dnstap frames without the query message (recorded without "full")
	response int // dnstap frames of responses and of other message types
}

// readInput sends each query of the file to fn, and each malformed line
// to bad; it stops at the first error bad returns. The format is detected:
// a dnstap frame stream starts with a control frame (four zero bytes); a
// file with client= in its first lines is a CoreDNS log; anything else is
// text.
func readInput(path string, fn func(query), bad func(*lineError) error, ign *ignored) (format string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(4)
	if len(head) == 4 && bytes.Equal(head, []byte{0, 0, 0, 0}) {
		return formatDnstap, readDnstap(path, br, fn, bad, ign)
	}
	format = formatText
	if peek, _ := br.Peek(min(br.Size(), 1<<16)); bytes.Contains(firstLines(peek, sniff), []byte("client=")) {
		format = formatLog
	}
	for n := 1; ; n++ {
		raw, long, err := readLine(br)
		if err == io.EOF && raw == nil {
			return format, nil
		}
		if err != nil && err != io.EOF {
			return format, fmt.Errorf("%s: %w", path, err)
		}
		if long {
			if err := bad(&lineError{path, "line", n, fmt.Errorf("longer than %d bytes", maxLine)}); err != nil {
				return format, err
			}
			continue
		}
		line := strings.TrimSpace(string(raw))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var q query
		if format == formatLog {
			var ok bool
			if q, ok, err = parseLogLine(line); err == nil && !ok {
				ign.other++
				if strings.Contains(" "+line+" ", " client=- ") {
					ign.dash++
				}
				continue
			}
		} else {
			q, err = parseTextLine(line)
		}
		if err != nil {
			if err := bad(&lineError{path, "line", n, err}); err != nil {
				return format, err
			}
			continue
		}
		if !decided(q.qtype) {
			ign.types += q.count
			continue
		}
		fn(q)
	}
}

// decided reports whether gslb decides queries of type t.
func decided(t uint16) bool { return t == dns.TypeA || t == dns.TypeAAAA || t == dns.TypeHTTPS }

// firstLines is the start of b up to its n-th newline.
func firstLines(b []byte, n int) []byte {
	end := 0
	for range n {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			return b
		}
		end += i + 1
	}
	return b[:end]
}

// readLine reads one line, at most maxLine bytes of it; long reports a
// longer line, whose rest is discarded.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line)+len(chunk) > maxLine {
			long = true
		} else {
			line = append(line, chunk...)
		}
		if err != nil {
			if len(line) > 0 || long {
				return line, long, nil
			}
			return nil, false, err
		}
		if !isPrefix {
			if line == nil {
				line = []byte{}
			}
			return line, long, nil
		}
	}
}

// parseTextLine reads "ADDRESS[/PREFIX] [COUNT]".
func parseTextLine(line string) (query, error) {
	f := strings.Fields(line)
	if len(f) > 2 {
		return query{}, fmt.Errorf("want ADDRESS[/PREFIX] [COUNT], got %d fields", len(f))
	}
	c, err := decide.ParseClient(f[0])
	if err != nil {
		return query{}, err
	}
	q := query{client: c, qtype: dns.TypeA, count: 1}
	if len(f) == 2 {
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 || n > maxCount {
			return query{}, fmt.Errorf("count %q is not a whole number in 1..%d", f[1], maxCount)
		}
		q.count = n
	}
	return q, nil
}

// parseLogLine reads a log line of the README's format: client=ADDRESS,
// via=ecs|remote, ecs=ADDRESS/SOURCE/SCOPE, and the query's type and name
// where "{type} {name}" left them, before the first key=value. ok is false
// for a line of no gslb decision: no client= (startup, errors), or
// client=- (a query gslb did not decide).
func parseLogLine(line string) (q query, ok bool, err error) {
	f := strings.Fields(line)
	kv := map[string]string{}
	q = query{qtype: dns.TypeA, count: 1}
	head := true
	for i, tok := range f {
		if k, v, isKV := strings.Cut(tok, "="); isKV {
			head = false
			if _, dup := kv[k]; !dup {
				kv[k] = v
			}
			continue
		}
		if head && i+1 < len(f) && strings.HasSuffix(f[i+1], ".") && !strings.Contains(f[i+1], "=") {
			if t, known := dns.StringToType[tok]; known {
				q.qtype, q.name = t, f[i+1]
			}
		}
	}
	client, has := kv["client"]
	if !has || client == "-" || client == "" {
		return query{}, false, nil
	}
	if kv["via"] == "ecs" && kv["ecs"] != "" && kv["ecs"] != "-" {
		// ADDRESS/SOURCE/SCOPE: the option as the query had it.
		p := kv["ecs"]
		if i := strings.LastIndex(p, "/"); i > 0 && strings.Count(p, "/") == 2 {
			p = p[:i]
		}
		c, err := decide.ParseClient(p)
		if err != nil {
			return query{}, false, fmt.Errorf("ecs=%q: %v", kv["ecs"], err)
		}
		q.client = c
		return q, true, nil
	}
	c, err := decide.ParseClient(client)
	if err != nil {
		return query{}, false, err
	}
	if c.Bits >= 0 {
		return query{}, false, fmt.Errorf("client=%q: want an address", client)
	}
	q.client = c
	return q, true, nil
}

// readDnstap reads the client queries of a dnstap frame-stream file: the
// ECS option of each query message when it has one, with the query address
// as the resolver's. Responses and other message types are skipped.
func readDnstap(path string, r io.Reader, fn func(query), bad func(*lineError) error, ign *ignored) error {
	fr, err := dnstap.NewReader(r, nil)
	if err != nil {
		return fmt.Errorf("%s: not a dnstap file: %v", path, err)
	}
	buf := make([]byte, maxFrame)
	for n := 1; ; n++ {
		k, err := fr.ReadFrame(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, framestream.ErrDataFrameTooLarge) {
			if err := bad(&lineError{path, "frame", n, err}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: frame %d: %v", path, n, err)
		}
		q, ok, err := dnstapQuery(buf[:k], ign)
		if err != nil {
			if err := bad(&lineError{path, "frame", n, err}); err != nil {
				return err
			}
			continue
		}
		if !ok {
			continue
		}
		if !decided(q.qtype) {
			ign.types++
			continue
		}
		fn(q)
	}
}

// dnstapQuery reads one frame; ok is false for a frame that is not a
// client query.
func dnstapQuery(frame []byte, ign *ignored) (q query, ok bool, err error) {
	var d dnstap.Dnstap
	if err := proto.Unmarshal(frame, &d); err != nil {
		return query{}, false, fmt.Errorf("not a dnstap message: %v", err)
	}
	m := d.GetMessage()
	if d.GetType() != dnstap.Dnstap_MESSAGE || m == nil || m.GetType() != dnstap.Message_CLIENT_QUERY {
		ign.response++
		return query{}, false, nil
	}
	raw := m.GetQueryMessage()
	if len(raw) == 0 {
		// Recorded without "full": no name, no type, no ECS.
		ign.noQuery++
		return query{}, false, nil
	}
	var remote netip.Addr
	if a, isIP := netip.AddrFromSlice(m.GetQueryAddress()); isIP {
		remote = a.Unmap()
	}
	msg := new(dns.Msg)
	if err := msg.Unpack(raw); err != nil {
		return query{}, false, fmt.Errorf("query message: %v", err)
	}
	if len(msg.Question) == 0 {
		return query{}, false, errors.New("query message without a question")
	}
	q = query{name: msg.Question[0].Name, qtype: msg.Question[0].Qtype, count: 1,
		at: time.Unix(int64(m.GetQueryTimeSec()), int64(m.GetQueryTimeNsec()))}
	if o := msg.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, isECS := opt.(*dns.EDNS0_SUBNET); isECS && e.SourceNetmask > 0 {
				var addr netip.Addr
				if e.Family == 1 {
					addr, _ = netip.AddrFromSlice(e.Address.To4())
				} else {
					addr, _ = netip.AddrFromSlice(e.Address.To16()) // an IPv4-mapped one stays IPv6
				}
				c, err := decide.ParseClient(fmt.Sprintf("%s/%d", addr, e.SourceNetmask))
				if err != nil {
					return query{}, false, fmt.Errorf("ECS: %v", err)
				}
				c.Remote = remote
				q.client = c
				return q, true, nil
			}
		}
	}
	if !remote.IsValid() {
		return query{}, false, errors.New("no query address and no ECS")
	}
	q.client = decide.Client{Addr: remote, Bits: -1}
	return q, true, nil
}
