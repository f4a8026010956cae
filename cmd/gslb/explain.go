package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/engine"

	"github.com/miekg/dns"
)

func explain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	c.register(fs, true)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gslb explain [flags] ADDRESS[/PREFIX] [NAME] [TYPE]\n\nNAME defaults to the node table's first record, TYPE (A, AAAA or HTTPS) to A.")
		help(stderr, "0 explained; 1 an error (the Corefile, a file of the block, or ADDRESS); 2 bad usage",
			"gslb explain -conf Corefile.example 202.101.172.0/24 www.example.org A")
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() < 1 || fs.NArg() > 3 {
		fs.Usage()
		return exitUsage
	}
	client, err := decide.ParseClient(fs.Arg(0))
	if err != nil {
		return fail(stderr, err)
	}
	qtype := dns.TypeA
	if fs.NArg() == 3 {
		t, ok := dns.StringToType[strings.ToUpper(fs.Arg(2))]
		if !ok || t != dns.TypeA && t != dns.TypeAAAA && t != dns.TypeHTTPS {
			return fail(stderr, fmt.Errorf("type %q: gslb answers A, AAAA and HTTPS", fs.Arg(2)))
		}
		qtype = t
	}
	e, err := engine.New(ctx, c.cfg)
	if err != nil {
		return fail(stderr, err)
	}
	defer e.Close()
	x, err := e.Explain(ctx, client, fs.Arg(1), qtype)
	if err != nil {
		return fail(stderr, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return fail(stderr, err)
		}
		return exitOK
	}
	report(stdout, x)
	return exitOK
}

// report prints an explanation as a short text report.
func report(w io.Writer, x *decide.Explanation) {
	fmt.Fprintf(w, "Query     %s %s\n", x.Name, x.Type)
	cl := x.Client
	switch {
	case cl.From == "ecs":
		fmt.Fprintf(w, "Client    %s, from the ECS option %s (subnet %s)\n", cl.Address, cl.ECS, cl.Subnet)
	case cl.ECS != "":
		fmt.Fprintf(w, "Client    %s, the resolver's address: the ECS option %s is too short to use (subnet %s)\n", cl.Address, cl.ECS, cl.Subnet)
	default:
		fmt.Fprintf(w, "Client    %s, the resolver's address, no ECS (subnet %s)\n", cl.Address, cl.Subnet)
	}
	loc := x.Location
	switch {
	case loc.Special:
		fmt.Fprintf(w, "Location  none: a special-purpose range (/%d), decided without a location; only the overrides and the pins apply to it\n", loc.Scope)
	case loc.Source == "none":
		fmt.Fprintf(w, "Location  unknown: no source placed the client, decided without a location\n")
	default:
		fmt.Fprintf(w, "Location  %s, from %s, holds for /%d\n", place(loc.ExplainedPlace), loc.Source, loc.Scope)
	}
	for _, s := range loc.Sources {
		var what string
		switch {
		case s.Error != "":
			what = "error: " + s.Error
		case !s.Found:
			what = "nothing"
		default:
			what = fmt.Sprintf("%s, /%d", place(s.ExplainedPlace), s.Bits)
		}
		won := ""
		if s.Won {
			won = "   <- used"
		}
		fmt.Fprintf(w, "  %-8s %s%s\n", s.Source, what, won)
	}

	switch {
	case x.HTTPS != nil:
		for _, part := range []struct {
			x    *decide.Explanation
			hint string
		}{{x.HTTPS.A, "ipv4hint"}, {x.HTTPS.AAAA, "ipv6hint"}} {
			fmt.Fprintf(w, "%s decision, for the %s\n", part.x.Type, part.hint)
			reportDecision(w, part.x)
		}
		scope := "no ECS"
		if x.Scope != nil {
			scope = fmt.Sprintf("/%d", *x.Scope)
		}
		switch {
		case x.Rcode != "NOERROR":
			fmt.Fprintf(w, "HTTPS     %s (all_down_servfail), scope %s\n", x.Rcode, scope)
		case x.HTTPS.Record == "":
			fmt.Fprintf(w, "HTTPS     NODATA, scope %s\n", scope)
		default:
			counted := "A"
			if x.HTTPS.A.Node == "" && x.HTTPS.AAAA.Node != "" {
				counted = "AAAA"
			}
			fmt.Fprintf(w, "HTTPS     %s (%s), TTL %d (%s), scope %s, counted as the %s decision\n", strings.Join(strings.Fields(x.HTTPS.Record), " "),
				x.HTTPS.Mode, x.TTL, x.TTLReason, scope, counted)
		}
	case x.Type == "HTTPS":
		scope := "no ECS"
		if x.Scope != nil {
			scope = fmt.Sprintf("/%d", *x.Scope)
		}
		fmt.Fprintf(w, "HTTPS     NODATA, scope %s\n", scope)
	default:
		reportDecision(w, x)
	}
	for _, n := range x.Notes {
		fmt.Fprintf(w, "Note      %s\n", n)
	}
}

// reportDecision prints one A or AAAA decision: the ladder, the nodes and
// the answer.
func reportDecision(w io.Writer, x *decide.Explanation) {
	fmt.Fprintln(w, "Ladder")
	for _, t := range x.Tiers {
		var ns []string
		for _, id := range t.Nodes {
			if slices.Contains(t.Usable, id) {
				ns = append(ns, id)
			} else {
				ns = append(ns, id+" ("+reasonOf(x, id)+")")
			}
		}
		list := "no node"
		if len(ns) > 0 {
			list = strings.Join(ns, ", ")
		}
		mark := ""
		if t.Tier == x.Tier {
			mark = "   <- answered"
		}
		fmt.Fprintf(w, "  %-13s %s%s\n", t.Tier, list, mark)
	}
	if x.Tier == "override" || x.Tier == "fail_open" || x.Tier == "fallback" || x.Tier == "none" {
		fmt.Fprintf(w, "  %-13s %s\n", x.Tier, map[string]string{
			"override":  "an override pinned the nodes",
			"fail_open": "no usable node: the least loaded answers",
			"fallback":  "no usable node: the record's fallback CNAME answers",
			"none":      "no node of the record has an address of this type",
		}[x.Tier])
	}

	fmt.Fprintln(w, "Nodes     (raw km, load, cost and rtt | the score's terms, weighted into the score; * the winner)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  node\ttier\tstate\tusable\tkm\tload\tcost\trtt\t| distance\tload\tcost\tquality\tstability\t= score")
	for _, n := range x.Candidates {
		usable := "yes"
		if !n.Usable {
			usable = "no: " + n.Reason
			if n.Error != "" {
				usable += " (" + n.Error + ")"
			}
		}
		if n.Winner {
			usable += " *"
		}
		if n.Reason == decide.ReasonFamily {
			fmt.Fprintf(tw, "  %s\t-\t%s\t%s\t\t%.2f\t%g\n", n.ID, n.State, usable, n.Load, n.Cost)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.2f\t%g\t%s\t| %.3f\t%.3f\t%.3f\t%.3f\t%.3f\t= %.3f\n", n.ID, n.Tier, n.State, usable,
			opt(n.DistanceKm, "%.0f"), n.Load, n.Cost, opt(n.RTTMs, "%.0fms"),
			n.Terms["distance"], n.Terms["load"], n.Terms["cost"], n.Terms["quality"], n.Terms["stability"], n.Score)
	}
	tw.Flush()

	var addrs []string
	for _, rr := range x.Answer {
		if rr.CNAME != "" && rr.Node == "" {
			addrs = append(addrs, "CNAME "+rr.CNAME+" (fallback)")
			continue
		}
		if rr.CNAME != "" {
			addrs = append(addrs, "CNAME "+rr.CNAME+" ("+rr.Node+")")
			continue
		}
		addrs = append(addrs, rr.Address+" ("+rr.Node+")")
	}
	scope := "no ECS"
	if x.Scope != nil {
		scope = fmt.Sprintf("/%d", *x.Scope)
	}
	switch {
	case x.Rcode != "NOERROR":
		fmt.Fprintf(w, "Answer    %s (all_down_servfail), scope %s\n", x.Rcode, scope)
	case len(addrs) == 0:
		fmt.Fprintf(w, "Answer    NODATA, scope %s\n", scope)
	default:
		pick := ""
		if x.PerSubnet && x.Contenders > 1 {
			pick = fmt.Sprintf(", picked by the subnet among %d contenders", x.Contenders)
		}
		fmt.Fprintf(w, "Answer    %s, TTL %d (%s), scope %s, winner %s%s\n", strings.Join(addrs, " "), x.TTL, x.TTLReason, scope, x.Node, pick)
	}
}

func place(p decide.ExplainedPlace) string {
	parts := []string{orDash(p.Country) + "/" + orDash(p.Province) + "/" + orDash(p.City)}
	if p.ISP != "" {
		parts = append(parts, p.ISP)
	}
	if p.ASN != 0 {
		parts = append(parts, fmt.Sprintf("AS%d", p.ASN))
	}
	if p.Lat != nil {
		c := fmt.Sprintf("%.2f,%.2f", *p.Lat, *p.Lon)
		if p.ProvinceCoords {
			c += " (province capital)"
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func opt(f *float64, format string) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf(format, *f)
}

func reasonOf(x *decide.Explanation, id string) string {
	for _, n := range x.Candidates {
		if n.ID == id {
			return n.Reason
		}
	}
	return ""
}
