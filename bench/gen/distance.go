package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// cmdDistance checks that the spread never trades distance: over the /24s
// placed in provinces left without a node, each answer under the defaults
// is at most max(100 km, 10%) farther from the client than under spread 0.
func cmdDistance(args []string) error {
	fs := flag.NewFlagSet("distance", flag.ExitOnError)
	city := fs.String("city", "", "City mmdb")
	asn := fs.String("asn", "", "ASN mmdb")
	ipdbPath := fs.String("ipdb", "", "IPIP.net database (optional)")
	subnets := fs.String("subnets", "", "one /24 CIDR a line (gen subnets)")
	drop := fs.String("drop", "XJ,XZ,QH,GS,NX", "provinces without a node (their clients are measured)")
	keep := fs.String("keep", "", "if set, the only provinces with nodes (e.g. BJ,SH,GD,SC): a sparse table")
	seed := fs.Uint64("seed", 1, "random seed (nodes)")
	spreadPrefix := fs.Int("spread-prefix", locate.DefaultSpreadPrefix4, "spread_prefix")
	fs.Parse(args)
	subs, err := readSubnets(*subnets)
	if err != nil {
		return err
	}
	db, err := geo.OpenFiles(geo.Files{"city": {*city}, "asn": {*asn}, "ipdb": {*ipdbPath}})
	if err != nil {
		return err
	}
	dropped := strings.Split(*drop, ",")
	kept := strings.Split(*keep, ",")
	var y bytes.Buffer
	w := bufio.NewWriter(&y)
	fmt.Fprintln(w, "nodes:")
	count := 0
	for _, nd := range siteNodes(*seed) {
		if slices.Contains(dropped, nd.Province) || (*keep != "" && !slices.Contains(kept, nd.Province)) {
			continue
		}
		count++
		fmt.Fprintf(w, "  - {id: %s, ipv4: [%s], country: CN, province: %s, isp: %s, lat: %.2f, lon: %.2f, cost: %.1f, load: %.2f}\n",
			nd.ID, nd.V4, nd.Province, nd.ISP, nd.Lat, nd.Lon, nd.Cost, nd.Load)
	}
	fmt.Fprintln(w, "records:\n  - name: www.example.org")
	w.Flush()
	tb, err := table.Parse("nodes.yaml", y.Bytes(), []string{"example.org."}, 60)
	if err != nil {
		return err
	}
	rec := tb.Records["www.example.org."]
	none := scoring.DefaultParams
	none.Spread = 0
	views := [2]*policy.View{}
	for i, p := range []*scoring.Params{&scoring.DefaultParams, &none} {
		views[i], _ = policy.NewView(policy.Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: p, Now: time.Now()})
	}
	var n, worse, bad int
	var sum [2]float64
	var worst float64
	for _, p := range subs {
		a := p.Addr()
		loc := db.Lookup(a)
		tb.Carriers.Apply(&loc)
		if !slices.Contains(dropped, loc.Province) || !loc.HasCoords {
			continue
		}
		res := locate.Result{Location: loc, Key: locate.KeyOf(a), Scope: loc.Bits}
		key, _ := res.SpreadUnit(uint8(*spreadPrefix), locate.DefaultSpreadPrefix6)
		c := scoring.Client{Country: loc.Country, Continent: loc.Continent, Province: loc.Province, ISP: loc.ISP,
			HasCoords: loc.HasCoords, Lat: loc.Lat, Lon: loc.Lon, ProvinceLevel: loc.ProvinceCoords}
		var km [2]float64
		for i, v := range views {
			d := v.Decide(&policy.Query{Record: rec, QType: dns.TypeA, Client: c, Subnet: uint64(key)})
			if d.Winner == nil {
				return fmt.Errorf("%s: no answer", p)
			}
			km[i] = scoring.Haversine(loc.Lat, loc.Lon, d.Winner.Lat, d.Winner.Lon)
			sum[i] += km[i]
		}
		n++
		if km[0] > km[1]+0.5 {
			worse++
		}
		if km[0] > km[1]+math.Max(100, 0.1*km[1]) {
			bad++
		}
		worst = math.Max(worst, km[0]-km[1])
	}
	if n == 0 {
		return fmt.Errorf("no /24 of %s in %s", *drop, *subnets)
	}
	fmt.Printf("%d nodes; %d /24s in %s: mean %.0f km with spread 0.1, %.0f km with spread 0; farther: %d, beyond max(100 km, 10%%): %d; worst +%.0f km\n",
		count, n, *drop, sum[0]/float64(n), sum[1]/float64(n), worse, bad, worst)
	return nil
}
