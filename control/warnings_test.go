package control

import (
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/fall"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/sign"
	"github.com/gslbdns/gslb/table"
)

func TestUnreachableNames(t *testing.T) {
	rec := map[string]*table.Record{"www.example.org.": {}, "ns1.example.org.": {}}
	through := fall.F{}
	through.SetZonesFromArgs([]string{"example.org."})
	tests := []struct {
		name string
		ns   []string
		soa  string
		fall fall.F
		want []string // a part of each warning, in order
	}{
		{"default mname", nil, "", fall.F{}, []string{"MNAME ns1.dns.example.org. (the default MNAME"}},
		{"default mname passed on", nil, "", through, nil},
		{"ns a record", []string{"ns1.example.org."}, "", fall.F{}, nil},
		{"ns outside", []string{"ns1.example.net."}, "", fall.F{}, nil},
		{"ns not a record", []string{"ns1.example.org.", "ns2.example.org."}, "", fall.F{}, []string{"name server ns2.example.org."}},
		{"soa mname", []string{"ns1.example.net."}, "ns9.example.org.", fall.F{}, []string{"MNAME ns9.example.org. (soa mname)"}},
	}
	for _, tc := range tests {
		o := &config.Options{Zones: []string{"example.org."}, Fall: tc.fall}
		o.SOA.MName = tc.soa
		got := UnreachableNames(o, &table.Table{Records: rec, Nameservers: tc.ns})
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d warnings", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q, want one with %q", tc.name, got[i], w)
			}
		}
	}
}

func TestLadderWarnings(t *testing.T) {
	short, err := scoring.ParseLadder([]string{"province", "all"})
	if err != nil {
		t.Fatal(err)
	}
	o := &config.Options{File: "Corefile", Lines: map[string]int{"ladder6": 7}}
	if w := ladderWarnings(o); len(w) != 0 {
		t.Errorf("The default ladders: %q, want no warning", w)
	}
	o.Params.Ladder6 = short
	w := ladderWarnings(o)
	if len(w) != 1 || !strings.HasPrefix(w[0], "ladder6 (Corefile:7) leaves out province_isp, neighbor_isp, neighbor, region, country, continent") {
		t.Errorf("A short ladder6: %q", w)
	}
}

// warn logs every warning of a start: a short ladder, DNSSEC with
// fallthrough, an unreachable name server; a clean block logs none.
func TestWarnLogs(t *testing.T) {
	logs := captureLog(t)
	short, err := scoring.ParseLadder([]string{"province", "all"})
	if err != nil {
		t.Fatal(err)
	}
	through := fall.F{}
	through.SetZonesFromArgs([]string{"cdn.example.org."})
	o := &config.Options{File: "Corefile", Zones: []string{"example.org."}, Fall: through, Lines: map[string]int{"ladder": 3}, DNSSEC: &sign.Config{}}
	o.Params.Ladder = short
	tbl := &table.Table{Records: map[string]*table.Record{"www.example.org.": {}}, Nameservers: []string{"ns1.example.org."}}
	warn(o, tbl)
	out := logs.String()
	for _, w := range []string{
		"[WARNING] plugin/gslb: ladder (Corefile:3) leaves out",
		"[WARNING] plugin/gslb: dnssec with fallthrough in Corefile",
		"[WARNING] plugin/gslb: name server ns1.example.org. (the node table's nameservers) is in the zone but not a record",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("Expected %q in the log, got %q", w, out)
		}
	}

	logs.Reset()
	warn(&config.Options{File: "Corefile", Zones: []string{"example.org."}}, &table.Table{
		Records: map[string]*table.Record{"ns1.example.org.": {}}, Nameservers: []string{"ns1.example.org."}})
	if out := logs.String(); out != "" {
		t.Errorf("A clean block logged %q", out)
	}
}
