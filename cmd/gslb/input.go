package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	dnstap "github.com/dnstap/golang-dnstap"
	"google.golang.org/protobuf/proto"

	"github.com/gslbdns/gslb"

	"github.com/miekg/dns"
)

// query is one query of a replay input.
type query struct {
	client gslb.Client
	name   string // "" when the input does not say
	qtype  uint16
	count  int
}

// lineError is a malformed line or frame of an input.
type lineError struct {
	file string
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.file, e.line, e.err) }

// Input formats.
const (
	formatText   = "text"
	formatLog    = "log"
	formatDnstap = "dnstap"
)

// readInput sends each query of the file to fn, and each malformed line
// to bad; it stops at the first error bad returns. The format is detected:
// a dnstap frame stream starts with a control frame (four zero bytes); a
// line with client= is a log line; anything else is text.
func readInput(path string, fn func(query), bad func(*lineError) error) (format string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(4)
	if len(head) == 4 && bytes.Equal(head, []byte{0, 0, 0, 0}) {
		return formatDnstap, readDnstap(path, br, fn, bad)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	format = ""
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if format == "" {
			format = formatText
			if strings.Contains(line, "client=") {
				format = formatLog
			}
		}
		var q query
		var err error
		if format == formatLog {
			q, err = parseLogLine(line)
		} else {
			q, err = parseTextLine(line)
		}
		if err != nil {
			if err := bad(&lineError{path, n, err}); err != nil {
				return format, err
			}
			continue
		}
		fn(q)
	}
	if err := sc.Err(); err != nil {
		return format, fmt.Errorf("%s: %w", path, err)
	}
	if format == "" {
		format = formatText
	}
	return format, nil
}

// parseTextLine reads "ADDRESS[/PREFIX] [COUNT]".
func parseTextLine(line string) (query, error) {
	f := strings.Fields(line)
	if len(f) > 2 {
		return query{}, fmt.Errorf("want ADDRESS[/PREFIX] [COUNT], got %d fields", len(f))
	}
	c, err := gslb.ParseClient(f[0])
	if err != nil {
		return query{}, err
	}
	q := query{client: c, qtype: dns.TypeA, count: 1}
	if len(f) == 2 {
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return query{}, fmt.Errorf("count %q is not a whole number above 0", f[1])
		}
		q.count = n
	}
	return q, nil
}

// parseLogLine reads a log line of the README's format: client=ADDRESS,
// via=ecs|remote, ecs=ADDRESS/SOURCE/SCOPE, and the query's type and name
// where "{type} {name}" left them.
func parseLogLine(line string) (query, error) {
	f := strings.Fields(line)
	kv := map[string]string{}
	q := query{qtype: dns.TypeA, count: 1}
	for i, tok := range f {
		if k, v, ok := strings.Cut(tok, "="); ok {
			kv[k] = v
			continue
		}
		if (tok == "A" || tok == "AAAA") && i+1 < len(f) && strings.HasSuffix(f[i+1], ".") {
			q.qtype, q.name = dns.StringToType[tok], f[i+1]
		}
	}
	client, ok := kv["client"]
	if !ok || client == "-" || client == "" {
		return query{}, errors.New("no client=ADDRESS")
	}
	if kv["via"] == "ecs" && kv["ecs"] != "" && kv["ecs"] != "-" {
		// ADDRESS/SOURCE/SCOPE: the option as the query had it.
		p := kv["ecs"]
		if i := strings.LastIndex(p, "/"); i > 0 && strings.Count(p, "/") == 2 {
			p = p[:i]
		}
		c, err := gslb.ParseClient(p)
		if err != nil {
			return query{}, fmt.Errorf("ecs=%s: %v", kv["ecs"], err)
		}
		q.client = c
		return q, nil
	}
	c, err := gslb.ParseClient(client)
	if err != nil {
		return query{}, err
	}
	if c.Bits >= 0 {
		return query{}, fmt.Errorf("client=%s: want an address", client)
	}
	q.client = c
	return q, nil
}

// readDnstap reads the queries of a dnstap frame-stream file: the ECS
// option of each query message when it has one, else the query address.
// Responses and frames of other types are skipped.
func readDnstap(path string, r io.Reader, fn func(query), bad func(*lineError) error) error {
	fr, err := dnstap.NewReader(r, nil)
	if err != nil {
		return fmt.Errorf("%s: not a dnstap file: %v", path, err)
	}
	buf := make([]byte, 1<<16)
	for n := 1; ; n++ {
		k, err := fr.ReadFrame(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: frame %d: %v", path, n, err)
		}
		q, ok, err := dnstapQuery(buf[:k])
		if err != nil {
			if err := bad(&lineError{path, n, err}); err != nil {
				return err
			}
			continue
		}
		if ok {
			fn(q)
		}
	}
}

// dnstapQuery reads one frame; ok is false for a frame that is not a query.
func dnstapQuery(frame []byte) (q query, ok bool, err error) {
	var d dnstap.Dnstap
	if err := proto.Unmarshal(frame, &d); err != nil {
		return query{}, false, fmt.Errorf("frame: %v", err)
	}
	m := d.GetMessage()
	if d.GetType() != dnstap.Dnstap_MESSAGE || m == nil {
		return query{}, false, nil
	}
	switch m.GetType() {
	case dnstap.Message_CLIENT_QUERY, dnstap.Message_AUTH_QUERY, dnstap.Message_RESOLVER_QUERY,
		dnstap.Message_FORWARDER_QUERY, dnstap.Message_STUB_QUERY, dnstap.Message_TOOL_QUERY:
	default:
		return query{}, false, nil
	}
	q = query{qtype: dns.TypeA, count: 1}
	if raw := m.GetQueryMessage(); len(raw) > 0 {
		msg := new(dns.Msg)
		if err := msg.Unpack(raw); err != nil {
			return query{}, false, fmt.Errorf("query message: %v", err)
		}
		if len(msg.Question) > 0 {
			q.name, q.qtype = msg.Question[0].Name, msg.Question[0].Qtype
		}
		if o := msg.IsEdns0(); o != nil {
			for _, opt := range o.Option {
				if e, isECS := opt.(*dns.EDNS0_SUBNET); isECS && e.SourceNetmask > 0 {
					c, err := gslb.ParseClient(fmt.Sprintf("%s/%d", e.Address, e.SourceNetmask))
					if err != nil {
						return query{}, false, fmt.Errorf("ECS: %v", err)
					}
					q.client = c
					return q, true, nil
				}
			}
		}
	}
	addr := m.GetQueryAddress()
	if len(addr) != 4 && len(addr) != 16 {
		return query{}, false, errors.New("no query address and no ECS")
	}
	c, err := gslb.ParseClient(ipString(addr))
	if err != nil {
		return query{}, false, err
	}
	q.client = c
	return q, true, nil
}
