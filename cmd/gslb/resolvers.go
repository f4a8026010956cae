package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/resolvers"
)

const resolversUsage = `usage: gslb resolvers [-json] [-ttl SECONDS] [-conf FILE] [-top N] INPUT...

The resolver observatory, offline: per resolver, the queries, the share with
ECS and its prefix lengths, and how long it keeps our answers, from its
re-query intervals of each name (the 10th percentile, once it re-asked 5
times or more); it keeps them too long ("stretched") at 1.5 times the ttl or
more. With -conf, the resolvers are summed per province and carrier, as the
block's locator places them.

INPUT is a dnstap file (client queries, recorded with "full"), or a CoreDNS
log of the README's format whose lines carry a time: an RFC 3339 time as a
field (journalctl -o short-iso gives one) or ts=TIME; ttl=N gives the
answer's ttl (else -ttl).

Exit status: 0 the report was printed, 1 an input or the Corefile does not
read, 2 bad usage.

Example:
  gslb resolvers -conf Corefile -ttl 60 /var/log/coredns/query.log

Flags:
`

func resolversCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("resolvers", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	ttl := fs.Uint("ttl", 60, "our answers' ttl, where the input does not say")
	conf := fs.String("conf", "", "a Corefile whose gslb block places the resolvers (default: none, no sums per place)")
	top := fs.Int("top", 50, "the resolvers listed, the busiest first (0: all)")
	fs.Usage = func() {
		fmt.Fprint(stderr, resolversUsage)
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() == 0 || *ttl == 0 || *ttl > 1<<31 || *top < 0 {
		fs.Usage()
		return exitUsage
	}
	var qs []resolvers.Query
	for _, path := range fs.Args() {
		if err := readTimed(path, func(q resolvers.Query) { qs = append(qs, q) }); err != nil {
			return fail(stderr, err)
		}
	}
	kept := resolvers.Analyze(qs, uint32(*ttl), resolvers.DefaultStretch)
	type place struct {
		Province  string  `json:"province"`
		ISP       string  `json:"isp"`
		Resolvers int     `json:"resolvers"`
		Queries   int     `json:"queries"`
		ECSShare  float64 `json:"ecs_share"`
		Known     int     `json:"known"`
		Stretched int     `json:"stretched"`
		// TTLKept is the median of its resolvers' kept ttls.
		TTLKept float64 `json:"ttl_kept_s"`
		kept    []float64
		ecs     float64
	}
	var places []*place
	if *conf != "" {
		e, err := engine.New(ctx, engine.Config{Corefile: *conf})
		if err != nil {
			return fail(stderr, err)
		}
		defer e.Close()
		byPlace := map[[2]string]*place{}
		for _, k := range kept {
			prov, isp := e.Place(ctx, k.Resolver)
			p := byPlace[[2]string{prov, isp}]
			if p == nil {
				p = &place{Province: prov, ISP: isp}
				byPlace[[2]string{prov, isp}] = p
				places = append(places, p)
			}
			p.Resolvers++
			p.Queries += k.Queries
			p.ecs += k.ECSShare * float64(k.Queries)
			if k.Known {
				p.Known++
				p.kept = append(p.kept, k.TTLKept)
			}
			if k.Stretched {
				p.Stretched++
			}
		}
		for _, p := range places {
			p.ECSShare = float64(int(1000*p.ecs/float64(max(p.Queries, 1)))) / 1000
			if len(p.kept) > 0 {
				sort.Float64s(p.kept)
				p.TTLKept = p.kept[len(p.kept)/2]
			}
		}
		sort.Slice(places, func(i, j int) bool {
			return places[i].Province+" "+places[i].ISP < places[j].Province+" "+places[j].ISP
		})
	}
	stretched, known := 0, 0
	for _, k := range kept {
		if k.Known {
			known++
		}
		if k.Stretched {
			stretched++
		}
	}
	list := kept
	if *top > 0 && len(list) > *top {
		list = list[:*top]
	}
	if *asJSON {
		out := struct {
			Queries   int              `json:"queries"`
			Known     int              `json:"known"`
			Stretched int              `json:"stretched"`
			Resolvers []resolvers.Kept `json:"resolvers"`
			Places    []*place         `json:"places,omitempty"`
		}{len(qs), known, stretched, list, places}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	fmt.Fprintf(stdout, "Queries    %d\nResolvers  %d (%d with enough re-queries to judge, %d keep answers 1.5x the ttl or longer)\n", len(qs), len(kept), known, stretched)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "resolver\tqueries\tecs\tprefixes\tttl\tkept\tstretched")
	for _, k := range list {
		keptS := "-"
		if k.Known {
			keptS = strconv.FormatFloat(k.TTLKept, 'f', 0, 64) + "s"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%s\t%ds\t%s\t%v\n", k.Resolver, k.Queries, 100*k.ECSShare, prefixes(k.ECSPrefixes), k.TTL, keptS, k.Stretched)
	}
	tw.Flush()
	if places != nil {
		fmt.Fprintln(stdout, "Places (the resolvers' own)")
		tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "province\tisp\tresolvers\tqueries\tecs\tkept (median)\tstretched")
		for _, p := range places {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f%%\t%.0fs\t%d of %d\n", dashIf(p.Province), dashIf(p.ISP), p.Resolvers, p.Queries, 100*p.ECSShare, p.TTLKept, p.Stretched, p.Known)
		}
		tw.Flush()
	}
	return exitOK
}

func dashIf(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func prefixes(m map[int]int) string {
	if len(m) == 0 {
		return "-"
	}
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "/%d:%d", k, m[k])
	}
	return b.String()
}

// readTimed reads the timed queries of a dnstap file or a log.
func readTimed(path string, fn func(resolvers.Query)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	if head, _ := br.Peek(4); len(head) == 4 && head[0] == 0 && head[1] == 0 && head[2] == 0 && head[3] == 0 {
		return readTimedDnstap(path, br, fn)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	for n := 1; sc.Scan(); n++ {
		q, ok, err := parseTimedLine(sc.Text())
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if ok {
			fn(q)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// parseTimedLine reads a log line: a time (an RFC 3339 field, or ts=),
// the resolver (the first address before the key=value pairs), the name,
// ecs= when via=ecs, ttl=. ok is false for a line of no gslb decision.
func parseTimedLine(line string) (resolvers.Query, bool, error) {
	q, ok, err := parseLogLine(line)
	if err != nil || !ok {
		return resolvers.Query{}, false, err
	}
	out := resolvers.Query{Name: q.name, ECSBits: -1}
	if q.client.Bits >= 0 {
		out.ECSBits = q.client.Bits
	}
	for _, tok := range strings.Fields(line) {
		k, v, kv := strings.Cut(tok, "=")
		switch {
		case kv && k == "ts":
			out.At = parseTime(v)
		case kv && k == "ttl":
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				out.TTL = uint32(n)
			}
		case kv:
		case out.At.IsZero() && parseTime(tok).Year() > 1:
			out.At = parseTime(tok)
		case !out.Resolver.IsValid():
			if a, err := netip.ParseAddr(strings.Trim(tok, "[]")); err == nil {
				out.Resolver = a.Unmap()
			} else if ap, err := netip.ParseAddrPort(tok); err == nil {
				out.Resolver = ap.Addr().Unmap()
			}
		}
	}
	switch {
	case out.At.IsZero():
		return out, false, errors.New("no time: give each line an RFC 3339 time (journalctl -o short-iso) or ts=TIME")
	case !out.Resolver.IsValid():
		return out, false, errors.New("no resolver address ({remote}) before the key=value pairs")
	}
	return out, true, nil
}

func parseTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.000000-0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// readTimedDnstap reads the client queries of a dnstap file with their
// times, as replay reads them.
func readTimedDnstap(path string, r io.Reader, fn func(resolvers.Query)) error {
	return readDnstap(path, r, func(q query) {
		res := q.client.Remote
		if !res.IsValid() {
			res = q.client.Addr // no ECS: the client is the resolver
		}
		fn(resolvers.Query{At: q.at, Resolver: res, Name: strings.ToLower(q.name), ECSBits: q.client.Bits})
	}, func(e *lineError) error { return e }, &ignored{})
}
