package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gslbdns/gslb"
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

	same, cross   int
	km            float64
	withDistance  int
	unmatchedName int
}

func newStats() *stats { return &stats{Tiers: map[string]int{}, Nodes: map[string]int{}} }

// add counts n queries that decided o, like the plugin's metrics do.
func (s *stats) add(o gslb.Outcome, n int) {
	s.Queries += n
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

func (s *stats) finish() {
	if s.same+s.cross > 0 {
		s.CrossProvinceRatio = float64(s.cross) / float64(s.same+s.cross)
	}
	if s.withDistance > 0 {
		s.MeanDistanceKm = s.km / float64(s.withDistance)
	}
}

// move is one subnet whose node changed from the baseline.
type move struct {
	Subnet  string `json:"subnet"`
	From    string `json:"from"`
	To      string `json:"to"`
	Tier    string `json:"tier"`
	queries int
}

// replayResult is what replay -json prints.
type replayResult struct {
	*stats
	Skipped  int     `json:"skipped"`
	Baseline *stats  `json:"baseline,omitempty"`
	Changed  *int    `json:"changed,omitempty"`
	Moves    *[]move `json:"moves,omitempty"`
}

func replay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	c.register(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	baselineNodes := fs.String("baseline-nodes", "", "a node table to compare -nodes (or the block's) against")
	maxCross := fs.Float64("max-cross", -1, "exit 3 when the cross-province ratio is above this fraction (0..1)")
	name := fs.String("name", "", "decide every query for this name (default: the query's own name, else the first record)")
	strict := fs.Bool("strict", false, "stop at the first malformed line instead of reporting and skipping it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: gslb replay [flags] INPUT...

INPUT is a text file (ADDRESS[/PREFIX] [COUNT] a line), a CoreDNS log file
written with the README's log format (client=...), or a dnstap file; the
format is detected.`)
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	if *maxCross > 1 {
		fmt.Fprintf(stderr, "gslb replay: -max-cross %g is not a fraction in 0..1\n", *maxCross)
		return exitUsage
	}
	e, err := gslb.NewEngine(ctx, c.cfg)
	if err != nil {
		return fail(stderr, err)
	}
	defer e.Close()
	var base *gslb.Engine
	if *baselineNodes != "" {
		bc := c.cfg
		bc.Nodes = *baselineNodes
		if base, err = gslb.NewEngine(ctx, bc); err != nil {
			return fail(stderr, err)
		}
		defer base.Close()
	}
	if *name != "" {
		// An unknown name is an error before any input is read.
		if err := e.CheckName(*name); err != nil {
			return fail(stderr, err)
		}
	}
	known := map[string]bool{}
	for _, n := range e.Records() {
		known[n] = true
	}

	cur, before := newStats(), newStats()
	type change struct {
		from, to, tier string
		queries        int
	}
	changes := map[netip.Prefix]*change{}
	skipped := 0
	var decideErr error
	each := func(q query) {
		if decideErr != nil {
			return
		}
		n := *name
		if n == "" && q.name != "" {
			if known[strings.ToLower(q.name)] {
				n = q.name
			} else {
				cur.unmatchedName += q.count
				return
			}
		}
		if q.qtype != dns.TypeA && q.qtype != dns.TypeAAAA {
			q.qtype = dns.TypeA
		}
		o, err := e.Decide(ctx, q.client, n, q.qtype)
		if err != nil {
			decideErr = err
			return
		}
		cur.add(o, q.count)
		if base == nil {
			return
		}
		b, err := base.Decide(ctx, q.client, n, q.qtype)
		if err != nil {
			decideErr = err
			return
		}
		before.add(b, q.count)
		if b.Node != o.Node {
			ch := changes[o.Subnet]
			if ch == nil {
				ch = &change{from: b.Node, to: o.Node, tier: o.Tier}
				changes[o.Subnet] = ch
			}
			ch.queries += q.count
		}
	}
	bad := func(le *lineError) error {
		skipped++
		if *strict {
			return le
		}
		fmt.Fprintf(stderr, "gslb replay: skipped %v\n", le)
		return nil
	}
	for _, in := range fs.Args() {
		if _, err := readInput(in, each, bad); err != nil {
			return fail(stderr, err)
		}
		if decideErr != nil {
			return fail(stderr, decideErr)
		}
	}
	cur.finish()
	before.finish()
	if cur.unmatchedName > 0 {
		fmt.Fprintf(stderr, "gslb replay: %d queries for names that are not records of %s were not decided (-name decides them for one)\n",
			cur.unmatchedName, e.NodesFile())
	}

	res := replayResult{stats: cur, Skipped: skipped}
	var moves []move
	if base != nil {
		for p, ch := range changes {
			moves = append(moves, move{Subnet: p.String(), From: orNone(ch.from), To: orNone(ch.to), Tier: ch.tier, queries: ch.queries})
		}
		slices.SortFunc(moves, func(a, b move) int {
			return cmp.Or(cmp.Compare(b.queries, a.queries), cmpSubnet(a.Subnet, b.Subnet))
		})
		n := len(changes)
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
	if *maxCross >= 0 && cur.CrossProvinceRatio > *maxCross {
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
	fmt.Fprintf(w, "Queries               %d", s.Queries)
	if r.Skipped > 0 {
		fmt.Fprintf(w, " (%d malformed lines skipped)", r.Skipped)
	}
	fmt.Fprintln(w)
	located := s.same + s.cross
	fmt.Fprintf(w, "Cross-province ratio  %.2f%% (%d of %d queries with a known province)\n", 100*s.CrossProvinceRatio, s.cross, located)
	if s.withDistance > 0 {
		fmt.Fprintf(w, "Mean distance         %.0f km (%d queries with coordinates)\n", s.MeanDistanceKm, s.withDistance)
	} else {
		fmt.Fprintf(w, "Mean distance         - (no query had coordinates)\n")
	}
	if r.Baseline != nil {
		b := r.Baseline
		fmt.Fprintf(w, "Baseline              %s: cross-province %.2f%%, mean distance %.0f km\n", baseline, 100*b.CrossProvinceRatio, b.MeanDistanceKm)
	}

	fmt.Fprintln(w, "Tiers")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "  tier\tqueries\tshare"
	if r.Baseline != nil {
		head += "\tbefore"
	}
	fmt.Fprintln(tw, head)
	for _, t := range scoring.Tiers() {
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
			fmt.Fprintf(w, "  %s: %s → %s, %s (%d queries)\n", m.Subnet, m.From, m.To, m.Tier, m.queries)
		}
	}
}

func share(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

func ipString(b []byte) string { return net.IP(b).String() }
