package policy

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

var zones = []string{"example.org."}

// chinaTable has a telecom, a unicom and a mobile node in 10 provinces.
func chinaTable(t testing.TB) *table.Table {
	t.Helper()
	provs := []struct {
		code     string
		lat, lon float64
	}{{"BJ", 39.9, 116.4}, {"SH", 31.2, 121.5}, {"ZJ", 30.3, 120.2}, {"JS", 32.1, 118.8}, {"GD", 23.1, 113.3},
		{"SC", 30.6, 104.1}, {"HB", 30.6, 114.3}, {"SD", 36.7, 117.1}, {"FJ", 26.1, 119.3}, {"HA", 34.8, 113.6}}
	y := "nodes:\n"
	n := 0
	for _, p := range provs {
		for _, isp := range []string{"telecom", "unicom", "mobile"} {
			n++
			y += fmt.Sprintf("  - {id: %s-%s, ipv4: [192.0.2.%d], ipv6: [\"2001:db8::%x\"], country: CN, province: %s, isp: %s, lat: %v, lon: %v, cost: %v}\n",
				p.code, isp, n, n, p.code, isp, p.lat, p.lon, float64(n%4)/10)
		}
	}
	y += "records:\n  - name: www.example.org\n  - name: api.example.org\n    nodes: [ZJ-telecom, SH-telecom, JS-unicom]\n" +
		"  - name: img.example.org\n    priority: low\n  - name: core.example.org\n    priority: high\n"
	tb, err := table.Parse("t.yaml", []byte(y), zones, 60)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// clients are located clients of every kind: with a city, province-level,
// country-level, abroad, and none.
func clients(r *rand.Rand) scoring.Client {
	provs := []string{"BJ", "SH", "ZJ", "JS", "GD", "SC", "HB", "SD", "FJ", "HA", "XZ", "HL"}
	isps := []string{"telecom", "unicom", "mobile", "edu", ""}
	switch r.IntN(8) {
	case 0:
		return scoring.Client{}
	case 1:
		return scoring.Client{Country: "CN", Continent: "AS", ISP: isps[r.IntN(len(isps))]}
	case 2:
		return scoring.Client{Country: "US", Continent: "NA", HasCoords: true, Lat: 37, Lon: -122}
	case 3:
		return scoring.Client{Country: "CN", Continent: "AS", Province: provs[r.IntN(len(provs))], ISP: isps[r.IntN(len(isps))],
			HasCoords: true, Lat: 30.27, Lon: 120.16, ProvinceLevel: true}
	}
	return scoring.Client{Country: "CN", Continent: "AS", Province: provs[r.IntN(len(provs))], ISP: isps[r.IntN(len(isps))],
		HasCoords: true, Lat: 20 + r.Float64()*20, Lon: 100 + r.Float64()*20}
}

// A decision from the cache is the decision made in full: same node, tier,
// candidates, score, distance, subnet dependence and order, whatever the
// parameters, the ladders, the loads, ramps, shedding, capacity weights, priorities,
// quality rows and pins.
func TestCachedDecisionsAreExact(t *testing.T) {
	tb := chinaTable(t)
	r := rand.New(rand.NewPCG(1, 2))
	links := scoring.NewLinks()
	links.Set("ZJ", "telecom", 7, scoring.Link{RTTMs: 5, Loss: 0.01})
	links.Set("", "unicom", 5, scoring.Link{RTTMs: 40, Loss: 0.3})
	// Feed cells: a TTFB, a 5xx ratio over max_error_rate, a hit ratio,
	// and a place coming back over the cooldown.
	links.Set("ZJ", "telecom", 3, scoring.Link{RTTMs: 35, Feed: true, ErrRate: 0.01, Hit: 0.9})
	links.Set("GD", "", 2, scoring.Link{RTTMs: 80, Feed: true, ErrRate: 0.4, Hit: 0.5})
	links.Set("", "mobile", 4, scoring.Link{RTTMs: -1, Feed: true, Hit: 0.7, Shed: 0.5})
	pin := &overrides.Entry{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Nodes: []string{"GD-mobile", "SC-telecom"}}
	now := time.Now()
	for round := range 40 {
		p := scoring.DefaultParams
		p.Spread = []float64{0, 0.05, 0.1, 0.3}[round%4]
		p.Answers = 1 + round%3
		if round%5 == 0 || round%7 == 0 {
			p.ShedLow, p.ShedHigh = 0.5, 0.9
		}
		if round%3 == 0 {
			p.Weights = scoring.Weights{0.4, 0.2, 0.1, 0.3}
		}
		if round%4 == 1 {
			p.Weights = scoring.Weights{0.4, 0.2, 0.1, 0.2, 0.1}
		}
		if round%4 == 2 {
			p.Weights = scoring.Weights{0.4, 0.2, 0.1, 0.2, 0, 0.1}
		}
		switch round % 3 {
		case 1:
			p.Ladder6 = mustLadder(t, "province_isp neighbor_isp province neighbor region country continent all")
		case 2:
			p.Ladder = mustLadder(t, "neighbor_isp province_isp region province country")
		}
		snap := health.NewSnapshot(map[string]health.Status{})
		v, _ := NewView(Inputs{Table: tb, Snapshot: snap, Params: &p, Links: links, Serial: 1, Now: now, Cache: NewCache()})
		full, _ := NewView(Inputs{Table: tb, Snapshot: snap, Params: &p, Links: links, Serial: 1, Now: now})
		for i := range v.Nodes {
			load := float64(r.IntN(10)) / 10
			v.Nodes[i].Load, full.Nodes[i].Load = load, load
			v.Nodes[i].Down = r.IntN(10) == 0
			full.Nodes[i].Down = v.Nodes[i].Down
			if r.IntN(15) == 0 {
				v.Nodes[i].Shed, full.Nodes[i].Shed = 0.5, 0.5
				v.shedding[i], v.anyShed = true, true
				full.shedding[i], full.anyShed = true, true
			}
			w := []float64{1, 1, 0.5, 2, 3}[r.IntN(5)]
			v.Nodes[i].Weight, full.Nodes[i].Weight = w, w
			fails, flaps := r.IntN(3), r.IntN(2)
			v.Nodes[i].Fails, full.Nodes[i].Fails = fails, fails
			v.anyFails, full.anyFails = v.anyFails || fails > 0, full.anyFails || fails > 0
			v.Nodes[i].Flaps, full.Nodes[i].Flaps = flaps, flaps
			if p.ShedHigh > 0 && load > p.ShedLow {
				v.shedding[i], v.anyShed = true, true
				full.shedding[i], full.anyShed = true, true
			}
		}
		for range 400 {
			c := clients(r)
			q := Query{Record: tb.Records["www.example.org."], QType: dns.TypeA, Client: c, Subnet: r.Uint64()}
			switch r.IntN(8) {
			case 0:
				q.Record = tb.Records["api.example.org."]
			case 1:
				q.Record = tb.Records["img.example.org."]
			case 2:
				q.Record = tb.Records["core.example.org."]
			}
			if r.IntN(7) == 0 {
				q.QType = dns.TypeAAAA
			}
			if r.IntN(20) == 0 {
				q.Pin = pin
			}
			for range 3 { // repeat: the cache fills, then answers
				got, want := v.Decide(&q), full.Decide(&q)
				if got != want {
					t.Fatalf("Round %d, %+v: cached %+v\nfull %+v", round, q.Client, got.Decision, want.Decision)
				}
				q.Subnet = r.Uint64()
			}
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	tb := chinaTable(b)
	snap := health.NewSnapshot(map[string]health.Status{})
	p := scoring.DefaultParams
	c := scoring.Client{Country: "CN", Continent: "AS", Province: "ZJ", ISP: "telecom", HasCoords: true, Lat: 30.27, Lon: 120.16}
	for _, bc := range []struct {
		name  string
		cache *Cache
	}{{"cached", NewCache()}, {"full", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			v, _ := NewView(Inputs{Table: tb, Snapshot: snap, Params: &p, Serial: 1, Now: time.Now(), Cache: bc.cache})
			q := Query{Record: tb.Records["www.example.org."], QType: dns.TypeA, Client: c}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				q.Subnet = uint64(i) << 8
				v.Decide(&q)
			}
		})
	}
}

func mustLadder(t testing.TB, s string) *scoring.Ladder {
	t.Helper()
	l, err := scoring.ParseLadder(strings.Fields(s))
	if err != nil {
		t.Fatal(err)
	}
	return l
}
