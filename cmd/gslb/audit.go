package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/overrides"
)

// maxRanges is how many disagreeing ranges the text report lists.
const maxRanges = 20

func audit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	// -overrides is the draft to write: the block's own overrides apply.
	fs.StringVar(&c.cfg.Corefile, "conf", "Corefile", "the Corefile whose gslb block to use")
	fs.StringVar(&c.cfg.Zone, "zone", "", "the gslb block's zone, when several server blocks have one")
	fs.StringVar(&c.cfg.Nodes, "nodes", "", "a node table to use instead of the block's")
	fs.StringVar(&c.cfg.IPDB, "ipdb", "", "an IPIP.net database to use instead of the block's")
	asJSON := fs.Bool("json", false, "print JSON")
	sample := fs.Int("sample", 0, "with no INPUT: audit this many /24s sampled evenly from the block's carrier lists")
	qualityFile := fs.String("quality", "", "CSV of dial-test round trips, cidr,node,rtt_ms: flag ranges far nearer another province's nodes")
	overridesOut := fs.String("overrides", "", "write a draft overrides file here for the ranges where the other sources agree against the one used")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: gslb audit [flags] [INPUT...]

Compares the block's location sources (MaxMind, .ipdb, ip2region, carrier
lists) over the addresses and prefixes of INPUT (one a line; a prefix is
split into /24s, IPv6 /48s; "-" is stdin), or over -sample N /24s of the
carrier lists.`)
		help(stderr, "0 audited; 1 an error (the Corefile, a file of the block, or an INPUT); 2 bad usage",
			"gslb audit -conf Corefile -sample 200000")
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() == 0 && *sample <= 0 {
		fs.Usage()
		return exitUsage
	}
	if *sample < 0 {
		fmt.Fprintf(stderr, "gslb audit: -sample %d is negative\n", *sample)
		return exitUsage
	}
	e, err := engine.New(ctx, c.cfg)
	if err != nil {
		return fail(stderr, err)
	}
	defer e.Close()
	r, err := e.Audit(ctx, engine.AuditConfig{Inputs: fs.Args(), Stdin: os.Stdin, Sample: *sample, Quality: *qualityFile})
	if err != nil {
		return fail(stderr, err)
	}
	if *overridesOut != "" {
		if err := writeOverrides(*overridesOut, r.Overrides); err != nil {
			return fail(stderr, err)
		}
	}
	if len(r.Sources) < 2 {
		fmt.Fprintln(stderr, "gslb audit: "+oneSource(r.Sources))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fail(stderr, err)
		}
		return exitOK
	}
	auditReport(stdout, r, *overridesOut)
	return exitOK
}

func writeOverrides(path string, entries []overrides.EntryYAML) error {
	if entries == nil {
		entries = []overrides.EntryYAML{}
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		fmt.Fprintln(w, "# Draft written by gslb audit: review each entry (its note says why) before using it.")
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(struct {
			Overrides []overrides.EntryYAML `yaml:"overrides"`
		}{entries}); err != nil {
			return err
		}
		return enc.Close()
	})
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// oneSource says why a block with one location source has nothing to
// compare.
func oneSource(sources []string) string {
	return fmt.Sprintf("nothing to compare: the block has one location source (%s); audit compares geoip (with asn), ipdb, ip2region and carrier_lists with each other: give the block two or more",
		strings.Join(sources, ", "))
}

func auditReport(w io.Writer, r *engine.AuditReport, overridesOut string) {
	fmt.Fprintf(w, "Units      %d\nSources    %s\n", r.Units, strings.Join(r.Sources, ", "))
	var pc, pa, cc, ca int
	for _, g := range r.Groups {
		pc, pa, cc, ca = pc+g.ProvinceCompared, pa+g.ProvinceAgree, cc+g.CarrierCompared, ca+g.CarrierAgree
	}
	fmt.Fprintf(w, "Agreement  province %s of %d compared, carrier %s of %d compared\n\n", pct(pa, pc), pc, pct(ca, cc), cc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "province\tcarrier\tunits\tprovince agree\tcarrier agree")
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s of %d\t%s of %d\n", orDash(g.Province), orDash(g.Carrier), g.Units,
			pct(g.ProvinceAgree, g.ProvinceCompared), g.ProvinceCompared, pct(g.CarrierAgree, g.CarrierCompared), g.CarrierCompared)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nDisagreements  %d ranges\n", len(r.Disagreements))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, d := range r.Disagreements {
		if i == maxRanges {
			fmt.Fprintf(tw, "... %d more (-json lists them all)\n", len(r.Disagreements)-maxRanges)
			break
		}
		var says []string
		for _, name := range slices.Sorted(maps.Keys(d.Says)) {
			s := d.Says[name]
			says = append(says, fmt.Sprintf("%s=%s/%s", name, orDash(s.Province), orDash(s.Carrier)))
		}
		oddNote := ""
		if d.Odd != "" {
			oddNote = " odd=" + d.Odd
		}
		fmt.Fprintf(tw, "%s-%s\t%d units\t%s\tused %s/%s (%s)%s\n", d.First, d.Last, d.Units, strings.Join(says, " "),
			orDash(d.Used.Province), orDash(d.Used.Carrier), d.UsedBy, oddNote)
	}
	tw.Flush()
	if r.Quality != nil {
		fmt.Fprintf(w, "\nQuality  %d ranges far nearer another province's nodes\n", len(r.Quality))
		for _, q := range r.Quality {
			fmt.Fprintf(w, "%s  placed in %s: %s %.0f ms; %s's %s %.0f ms\n", q.CIDR, q.Province, q.OwnNode, q.OwnRTTMs, q.OtherProvince, q.OtherNode, q.OtherRTTMs)
		}
	}
	if overridesOut != "" {
		fmt.Fprintf(w, "\nWrote %d draft overrides to %s\n", len(r.Overrides), overridesOut)
	}
}
