package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// maxMoves is how many of the moves a replay lists.
const maxMoves = 20

// stats are one node table's totals over a replay.
type stats struct {
	Queries            int            `json:"queries"`
	Tiers              map[string]int `json:"tiers"`
	CrossProvinceRatio float64        `json:"cross_province_ratio"`
	Nodes              map[string]int `json:"nodes"`
	MeanDistanceKm     float64        `json:"mean_distance_km"`
	// NoData counts queries no node of the record could answer (no address
	// of the type): the server answers NODATA and counts no tier.
	NoData int `json:"nodata"`
	// ResolverEntriesPerSubnet is what an ECS-caching resolver keeps: the
	// distinct (scope network, answer) pairs per name and type, per
	// distinct client /24 (/48) asked for. Scopes counts the queries by
	// the reply's scope length.
	ResolverEntriesPerSubnet float64        `json:"resolver_entries_per_subnet"`
	Scopes                   map[string]int `json:"scopes"`
	// TTFB is what the -feed snapshot's cells expect of the decisions.
	TTFB *ttfbJ `json:"ttfb,omitempty"`

	same, cross  int
	entries      map[scopeEntry]bool
	subnets      map[scopeEntry]bool
	km           float64
	withDistance int
}

// scopeEntry is one resolver cache entry: a name and type's answer for a
// network.
type scopeEntry struct {
	net    netip.Prefix
	name   string
	qtype  uint16
	answer string
}

func newStats() *stats {
	return &stats{Tiers: map[string]int{}, Nodes: map[string]int{}, Scopes: map[string]int{},
		entries: map[scopeEntry]bool{}, subnets: map[scopeEntry]bool{}}
}

// add counts n queries for name and qtype that decided o, like the
// plugin's metrics do, and the resolver entries their scopes make.
func (s *stats) add(o engine.Outcome, name string, qtype uint16, n int) {
	s.Queries += n
	if o.Client.IsValid() {
		s.Scopes["/"+strconv.Itoa(int(o.Scope))] += n
		net, _ := o.Client.Prefix(int(o.Scope))
		s.entries[scopeEntry{net, name, qtype, o.Answer}] = true
		s.subnets[scopeEntry{o.Subnet, name, qtype, ""}] = true
	}
	if o.Tier == "" {
		s.NoData += n
		return
	}
	s.Tiers[o.Tier] += n
	if o.Node != "" {
		s.Nodes[o.Node] += n
	}
	if o.Located {
		if o.Same {
			s.same += n
		} else {
			s.cross += n
		}
	}
	if o.DistanceKm >= 0 {
		s.km += o.DistanceKm * float64(n)
		s.withDistance += n
	}
}

// ttfbJ is the TTFB the decisions should give, by the cells of the places
// and nodes they chose.
type ttfbJ struct {
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	With    int     `json:"queries_with_cell"`
	Without int     `json:"queries_without_cell"`

	exp feed.Expected
}

// addTTFB counts o's queries against the snapshot's cells.
func (s *stats) addTTFB(snap *feed.Snapshot, o engine.Outcome, n int) {
	if s.TTFB == nil {
		s.TTFB = &ttfbJ{}
	}
	s.TTFB.exp.Add(snap, o.Province, o.ISP, o.Node, n)
}

func (s *stats) finish() {
	if t := s.TTFB; t != nil {
		t.P50, t.P95, t.With, t.Without = t.exp.Quantile(0.5), t.exp.Quantile(0.95), t.exp.With, t.exp.Without
	}
	if s.same+s.cross > 0 {
		s.CrossProvinceRatio = float64(s.cross) / float64(s.same+s.cross)
	}
	if s.withDistance > 0 {
		s.MeanDistanceKm = s.km / float64(s.withDistance)
	}
	if len(s.subnets) > 0 {
		s.ResolverEntriesPerSubnet = float64(len(s.entries)) / float64(len(s.subnets))
	}
}

func ttfbLine(t *ttfbJ) string {
	if t.With == 0 {
		return "- (no decision had a feed cell)"
	}
	return fmt.Sprintf("p50 %.0f ms, p95 %.0f ms", t.P50, t.P95)
}

// move is one subnet whose node changed from the baseline, for one name
// and type.
type move struct {
	Subnet  string `json:"subnet"`
	From    string `json:"from"`
	To      string `json:"to"`
	Tier    string `json:"tier"`
	Name    string `json:"name"`
	Type    string `json:"type"`
	queries int
}

// replayResult is what replay -json prints.
type replayResult struct {
	*stats
	Skipped  int      `json:"skipped"`
	Ignored  ignoredJ `json:"ignored"`
	Notes    []string `json:"notes,omitempty"`
	Baseline *stats   `json:"baseline,omitempty"`
	Changed  *int     `json:"changed,omitempty"`
	Moves    *[]move  `json:"moves,omitempty"`
}

// ignoredJ is what the inputs held that was not replayed.
type ignoredJ struct {
	OtherNames int `json:"other_names"` // queries for names that are not records
	OtherTypes int `json:"other_types"` // queries of other types than A, AAAA and HTTPS
	OtherLines int `json:"other_lines"` // log lines of no gslb decision
	NoQuery    int `json:"no_query"`    // dnstap frames without the query message
}

// maxReported is how many skipped lines are reported one by one.
const maxReported = 20

func replay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	c.register(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	baselineNodes := fs.String("baseline-nodes", "", "a node table to compare -nodes (or the block's) against")
	maxCross := fs.Float64("max-cross", -1, "exit 3 when the cross-province ratio is above this fraction (0..1)")
	name := fs.String("name", "", "decide every query for this name (default: the query's own name, else the first record)")
	strict := fs.Bool("strict", false, "stop at the first malformed line instead of reporting and skipping it")
	feedSnap := fs.String("feed", "", "a saved GET /v1/feed answer: decide with its fresh cells, and report the TTFB p50/p95 they expect of the decisions (and of -baseline-nodes')")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: gslb replay [flags] INPUT...

INPUT is a text file (ADDRESS[/PREFIX] [COUNT] a line), a CoreDNS log file
written with the README's log format (client=...), or a dnstap file; the
format is detected.`)
		help(stderr, "0 replayed; 1 an error, or no query was decided; 2 bad usage; 3 the cross-province ratio is above -max-cross",
			"gslb replay -conf Corefile.example -max-cross 0.2 clients.txt")
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	maxCrossSet := false
	fs.Visit(func(f *flag.Flag) { maxCrossSet = maxCrossSet || f.Name == "max-cross" })
	if maxCrossSet && !(*maxCross >= 0 && *maxCross <= 1) {
		fmt.Fprintf(stderr, "gslb replay: -max-cross %g is not a fraction in 0..1\n", *maxCross)
		return exitUsage
	}
	var snap *feed.Snapshot
	if *feedSnap != "" {
		var err error
		if snap, err = feed.ReadSnapshot(*feedSnap); err != nil {
			return fail(stderr, fmt.Errorf("-feed: %w", err))
		}
		c.cfg.Feed = snap.Cells() // both sides decide with the cells
	}
	e, err := engine.New(ctx, c.cfg)
	if err != nil {
		return fail(stderr, err)
	}
	defer e.Close()
	var base *engine.Engine
	if *baselineNodes != "" {
		bc := c.cfg
		bc.Nodes = *baselineNodes
		if base, err = engine.New(ctx, bc); err != nil {
			return fail(stderr, err)
		}
		defer base.Close()
	}
	// The name of queries that carry none (text lines, and every query with
	// -name): the table under test's first record, the same for both sides.
	fixed := *name
	if fixed == "" && len(e.Records()) > 0 {
		fixed = e.Records()[0]
	}
	for _, en := range []*engine.Engine{e, base} {
		if en == nil {
			continue
		}
		if err := en.CheckName(fixed); err != nil {
			return fail(stderr, fmt.Errorf("%s: %w", en.NodesFile(), err))
		}
	}
	known := map[string]bool{}
	for _, n := range e.Records() {
		known[n] = true
	}

	cur, before := newStats(), newStats()
	type moveKey struct {
		subnet netip.Prefix
		name   string
		qtype  uint16
	}
	type change struct {
		from, to, tier string
		queries        int
	}
	changes := map[moveKey]*change{}
	changedSubnets := map[netip.Prefix]bool{}
	skipped := 0
	var ign ignored
	otherNames := 0
	var decideErr error
	each := func(q query) {
		if decideErr != nil {
			return
		}
		n := fixed
		if *name == "" && q.name != "" {
			n = strings.ToLower(q.name)
			if !known[n] {
				otherNames += q.count
				return
			}
		}
		o, err := e.Decide(ctx, q.client, n, q.qtype)
		if err != nil {
			decideErr = err
			return
		}
		cur.add(o, n, q.qtype, q.count)
		if snap != nil {
			cur.addTTFB(snap, o, q.count)
		}
		if base == nil {
			return
		}
		b, err := base.Decide(ctx, q.client, n, q.qtype)
		if err != nil {
			decideErr = fmt.Errorf("baseline %s: %w", *baselineNodes, err)
			return
		}
		before.add(b, n, q.qtype, q.count)
		if snap != nil {
			before.addTTFB(snap, b, q.count)
		}
		if b.Node != o.Node {
			k := moveKey{o.Subnet, n, q.qtype}
			ch := changes[k]
			if ch == nil {
				ch = &change{from: b.Node, to: o.Node, tier: o.Tier}
				changes[k] = ch
				changedSubnets[o.Subnet] = true
			}
			ch.queries += q.count
		}
	}
	bad := func(le *lineError) error {
		skipped++
		if *strict {
			return le
		}
		if skipped <= maxReported {
			fmt.Fprintf(stderr, "gslb replay: skipped %v\n", le)
		}
		return nil
	}
	for _, in := range fs.Args() {
		if _, err := readInput(in, each, bad, &ign); err != nil {
			return fail(stderr, err)
		}
		if decideErr != nil {
			return fail(stderr, decideErr)
		}
	}
	if skipped > maxReported {
		fmt.Fprintf(stderr, "gslb replay: skipped %d more malformed lines\n", skipped-maxReported)
	}
	cur.finish()
	before.finish()
	notes := append([]string(nil), e.Notes...)
	if otherNames > 0 {
		notes = append(notes, fmt.Sprintf("%d queries for names that are not records of %s were not decided (-name decides every query for one name)", otherNames, e.NodesFile()))
	}
	if ign.noQuery > 0 {
		notes = append(notes, fmt.Sprintf("%d dnstap queries without their message were not decided: record with `dnstap ... full`", ign.noQuery))
	}
	if ign.types > 0 {
		notes = append(notes, fmt.Sprintf("%d queries of other types than A, AAAA and HTTPS were not decided", ign.types))
	}

	res := replayResult{stats: cur, Skipped: skipped, Notes: notes,
		Ignored: ignoredJ{OtherNames: otherNames, OtherTypes: ign.types, OtherLines: ign.other, NoQuery: ign.noQuery}}
	var moves []move
	if base != nil {
		for k, ch := range changes {
			moves = append(moves, move{Subnet: k.subnet.String(), From: orNone(ch.from), To: orNone(ch.to), Tier: orNone(ch.tier),
				Name: k.name, Type: dns.TypeToString[k.qtype], queries: ch.queries})
		}
		slices.SortFunc(moves, func(a, b move) int {
			return cmp.Or(cmp.Compare(b.queries, a.queries), cmpSubnet(a.Subnet, b.Subnet), strings.Compare(a.Name, b.Name), strings.Compare(a.Type, b.Type))
		})
		n := len(changedSubnets)
		res.Baseline, res.Changed = before, &n
		top := moves[:min(len(moves), maxMoves)]
		if top == nil {
			top = []move{}
		}
		res.Moves = &top
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fail(stderr, err)
		}
	} else {
		replayReport(stdout, &res, e.NodesFile(), *baselineNodes)
	}
	switch {
	case cur.Queries == 0 && ign.dash > 0:
		// Without the metadata plugin, log writes "-" for every gslb label.
		fmt.Fprintln(stderr, "gslb replay: no query was decided: every line has client=-: was metadata enabled? (the log's {/gslb/...} labels need the metadata plugin in the server block)")
		return exitError
	case cur.Queries == 0:
		fmt.Fprintln(stderr, "gslb replay: no query was decided: is the input a text file, a log with client=, or a dnstap file recorded with full?")
		return exitError
	case maxCrossSet && cur.same+cur.cross == 0:
		fmt.Fprintln(stderr, "gslb replay: -max-cross: no answered query had a known province, so there is no ratio to hold")
		return exitError
	case maxCrossSet && cur.CrossProvinceRatio > *maxCross:
		fmt.Fprintf(stderr, "gslb replay: cross-province ratio %.4f is above -max-cross %g\n", cur.CrossProvinceRatio, *maxCross)
		return exitCross
	}
	return exitOK
}

func orNone(id string) string {
	if id == "" {
		return "(none)"
	}
	return id
}

func cmpSubnet(a, b string) int {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return cmp.Or(pa.Addr().Compare(pb.Addr()), cmp.Compare(pa.Bits(), pb.Bits()))
}

func replayReport(w io.Writer, r *replayResult, nodes, baseline string) {
	s := r.stats
	fmt.Fprintf(w, "Queries               %d\n", s.Queries)
	fmt.Fprintf(w, "Skipped               %d malformed lines or frames\n", r.Skipped)
	ig := r.Ignored
	fmt.Fprintf(w, "Ignored               %d (%d for other names, %d of other types, %d other log lines, %d dnstap frames without the query)\n",
		ig.OtherNames+ig.OtherTypes+ig.OtherLines+ig.NoQuery, ig.OtherNames, ig.OtherTypes, ig.OtherLines, ig.NoQuery)
	if s.NoData > 0 {
		fmt.Fprintf(w, "NODATA                %d (no node of the record has an address of the type)\n", s.NoData)
	}
	located := s.same + s.cross
	fmt.Fprintf(w, "Cross-province ratio  %.2f%% (%d of %d queries with a known province)\n", 100*s.CrossProvinceRatio, s.cross, located)
	if s.withDistance > 0 {
		fmt.Fprintf(w, "Mean distance         %.0f km (%d queries with coordinates)\n", s.MeanDistanceKm, s.withDistance)
	} else {
		fmt.Fprintf(w, "Mean distance         - (no query had coordinates)\n")
	}
	if r.Baseline != nil {
		b := r.Baseline
		dist := "-"
		if b.withDistance > 0 {
			dist = fmt.Sprintf("%.0f km", b.MeanDistanceKm)
		}
		fmt.Fprintf(w, "Baseline              %s: cross-province %.2f%%, mean distance %s\n", baseline, 100*b.CrossProvinceRatio, dist)
	}

	if t := s.TTFB; t != nil {
		fmt.Fprintf(w, "Expected TTFB         %s (%d of %d queries with a feed cell)\n", ttfbLine(t), t.With, t.With+t.Without)
		if r.Baseline != nil && r.Baseline.TTFB != nil {
			fmt.Fprintf(w, "Baseline TTFB         %s\n", ttfbLine(r.Baseline.TTFB))
		}
	}
	fmt.Fprintf(w, "Resolver entries      %.3f per subnet (ECS scopes:%s)\n", s.ResolverEntriesPerSubnet, scopeHistogram(s))
	if r.Baseline != nil {
		fmt.Fprintf(w, "Baseline entries      %.3f per subnet (ECS scopes:%s)\n", r.Baseline.ResolverEntriesPerSubnet, scopeHistogram(r.Baseline))
	}

	fmt.Fprintln(w, "Tiers")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "  tier\tqueries\tshare"
	if r.Baseline != nil {
		head += "\tbefore"
	}
	fmt.Fprintln(tw, head)
	tiers := scoring.Tiers()
	for t := range s.Tiers {
		if !slices.Contains(tiers, t) {
			tiers = append(tiers, t)
		}
	}
	for _, t := range tiers {
		if s.Tiers[t] == 0 && (r.Baseline == nil || r.Baseline.Tiers[t] == 0) {
			continue
		}
		line := fmt.Sprintf("  %s\t%d\t%s", t, s.Tiers[t], share(s.Tiers[t], s.Queries))
		if r.Baseline != nil {
			line += "\t" + share(r.Baseline.Tiers[t], r.Baseline.Queries)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()

	fmt.Fprintf(w, "Nodes (%s)\n", nodes)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head = "  node\tqueries\tshare"
	if r.Baseline != nil {
		head += "\tbefore"
	}
	fmt.Fprintln(tw, head)
	ids := slices.Collect(maps.Keys(s.Nodes))
	if r.Baseline != nil {
		for id := range r.Baseline.Nodes {
			if _, ok := s.Nodes[id]; !ok {
				ids = append(ids, id)
			}
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(s.Nodes[b], s.Nodes[a]), strings.Compare(a, b)) })
	for _, id := range ids {
		line := fmt.Sprintf("  %s\t%d\t%s", id, s.Nodes[id], share(s.Nodes[id], s.Queries))
		if r.Baseline != nil {
			line += "\t" + share(r.Baseline.Nodes[id], r.Baseline.Queries)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()

	if r.Changed != nil {
		fmt.Fprintf(w, "Changed               %d subnets changed node\n", *r.Changed)
		for _, m := range *r.Moves {
			fmt.Fprintf(w, "  %s: %s → %s, %s (%d queries, %s %s)\n", m.Subnet, m.From, m.To, m.Tier, m.queries, m.Name, m.Type)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note                  %s\n", n)
	}
}

// scopeHistogram is the scopes' shares, shortest first.
func scopeHistogram(s *stats) string {
	ks := slices.Collect(maps.Keys(s.Scopes))
	slices.SortFunc(ks, func(a, b string) int {
		x, _ := strconv.Atoi(a[1:])
		y, _ := strconv.Atoi(b[1:])
		return cmp.Compare(x, y)
	})
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s %s", k, share(s.Scopes[k], s.Queries))
	}
	return b.String()
}

func share(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}
