package decide

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Explanation is a whole decision, as the gslb tool prints it. The JSON
// keys are a contract: scripts read them.
type Explanation struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Client     ExplainedClient   `json:"client"`
	Location   ExplainedLocation `json:"location"`
	Tiers      []ExplainedTier   `json:"tiers"`
	Candidates []ExplainedNode   `json:"candidates"`
	Policy     string            `json:"policy"` // stable, or canary for a subnet in the canary
	Tier       string            `json:"tier"`   // the rung that answered
	Node       string            `json:"node"`   // the winner; "" when none
	// PerSubnet: the client's /24 (/48) picked the winner among the
	// contenders (a tie or the spread).
	PerSubnet  bool          `json:"per_subnet"`
	Contenders int           `json:"contenders"` // usable nodes on the rung
	Answer     []ExplainedRR `json:"answer"`
	Rcode      string        `json:"rcode"`
	TTL        uint32        `json:"ttl"`
	Scope      *uint8        `json:"scope"` // the ECS scope; null without ECS
	Notes      []string      `json:"notes,omitempty"`

	TTLReason string `json:"ttl_reason"` // why this ttl: stable, ramping, shedding, probe_failed, fail_open, expiry

	// HTTPS is set for an HTTPS query of a record with https.
	HTTPS *ExplainedHTTPS `json:"https,omitempty"`

	// Population is the resolver's population that decided a query
	// without usable ECS; absent: none did.
	Population *ExplainedPopulation `json:"population,omitempty"`
}

// ExplainedPopulation is the population a decision was made for: the
// resolver (or its /24 or /48), the place decided for, the share of its
// clients whose node the answer is, its largest places, the clients
// learned, and how long since the last one.
type ExplainedPopulation struct {
	Resolver   string        `json:"resolver"`
	Place      string        `json:"place"`
	Share      float64       `json:"share"`
	Places     []SharedPlace `json:"places"`
	Samples    float64       `json:"samples"`
	AgeSeconds float64       `json:"age_s"`
}

// SharedPlace is a place of a population and its share of the clients.
type SharedPlace struct {
	Place string  `json:"place"`
	Share float64 `json:"share"`
}

func explainedPopulation(p *resolvers.Population, out *Outcome) *ExplainedPopulation {
	x := &ExplainedPopulation{Resolver: p.Resolver.String(), Place: strings.TrimSpace(out.Loc.Province + " " + out.Loc.ISP),
		Share: math.Round(out.PopulationShare*1000) / 1000, Samples: math.Round(p.Samples*1000) / 1000,
		AgeSeconds: math.Round(time.Since(p.Learned).Seconds())}
	for i, l := range p.Places {
		x.Places = append(x.Places, SharedPlace{strings.TrimSpace(l.Province + " " + l.ISP), math.Round(p.Shares[i]*1000) / 1000})
	}
	return x
}

// ExplainedHTTPS is how an HTTPS answer came about: the A and the AAAA
// decision, each explained as for its own query, and the record.
type ExplainedHTTPS struct {
	// Record is the answer in presentation form; "" for NODATA (no node
	// of either family) and SERVFAIL.
	Record string `json:"record"`
	// Mode is service (ServiceMode with hints) or alias (AliasMode to a
	// cname winner or the fallback); "" without a record.
	Mode string       `json:"mode"`
	A    *Explanation `json:"a"`
	AAAA *Explanation `json:"aaaa"`
}

// ExplainedClient is the address the decision is for.
type ExplainedClient struct {
	Address string `json:"address"`
	From    string `json:"from"`          // ecs or remote, as in the gslb/client_source metadata
	ECS     string `json:"ecs,omitempty"` // the query's option, ADDRESS/PREFIX
	Subnet  string `json:"subnet"`        // the /24 (/48) that keys caches, ties and the spread
}

// ExplainedPlace is one location.
type ExplainedPlace struct {
	Country   string   `json:"country,omitempty"`
	Continent string   `json:"continent,omitempty"`
	Province  string   `json:"province,omitempty"`
	City      string   `json:"city,omitempty"`
	ISP       string   `json:"isp,omitempty"`
	ASN       uint32   `json:"asn,omitempty"`
	Lat       *float64 `json:"lat,omitempty"`
	Lon       *float64 `json:"lon,omitempty"`
	// ProvinceCoords: the coordinates are the province's capital.
	ProvinceCoords bool  `json:"province_coords,omitempty"`
	Bits           uint8 `json:"bits"` // the network the data holds for
}

// ExplainedSource is what one source said.
type ExplainedSource struct {
	Source string `json:"source"` // override, geoip, ipdb, redis, online
	Found  bool   `json:"found"`
	Won    bool   `json:"won"`
	Error  string `json:"error,omitempty"`
	ExplainedPlace
}

// ExplainedLocation is the location the decision used, and every source's.
type ExplainedLocation struct {
	Source  string            `json:"source"` // the source that placed the client; none when none did
	Special bool              `json:"special,omitempty"`
	Scope   uint8             `json:"scope"` // the prefix the location holds for
	Sources []ExplainedSource `json:"sources"`
	ExplainedPlace
}

// ExplainedTier is one rung of the ladder that was tried.
type ExplainedTier struct {
	Tier   string   `json:"tier"`
	Nodes  []string `json:"nodes"`  // the nodes whose best rung it is
	Usable []string `json:"usable"` // those of them that could answer
}

// ExplainedNode is one node of the record.
type ExplainedNode struct {
	ID    string `json:"id"`
	Tier  string `json:"tier,omitempty"` // its best rung for this client
	State string `json:"state"`
	// Vantage is the fleet vantage whose verdict State is (a carrier, or
	// fleet); absent: this instance's probes.
	Vantage string `json:"vantage,omitempty"`
	Usable  bool   `json:"usable"`
	// Reason: down, drained (by the admin API), overloaded, lossy, shed
	// (turned away or ramping), or family (no address of the queried
	// type).
	Reason string `json:"reason,omitempty"`
	// Error is the failure that took a down node down, as this
	// instance's probe saw it: "connect: connection refused".
	Error      string             `json:"error,omitempty"`
	DistanceKm *float64           `json:"distance_km"` // null when distance plays no part
	Load       float64            `json:"load"`
	Cost       float64            `json:"cost"`
	RTTMs      *float64           `json:"rtt_ms,omitempty"`
	Terms      map[string]float64 `json:"terms,omitempty"`
	Score      float64            `json:"score"`
	Winner     bool               `json:"winner"`
}

// ExplainedRR is one address of the answer.
type ExplainedRR struct {
	Node    string `json:"node"`
	Address string `json:"address,omitempty"`
	CNAME   string `json:"cname,omitempty"` // a cname node's answer
}

// ReasonFamily: the node has no address of the queried type.
const ReasonFamily = "family"

// ReasonDrained: the admin API drained the node.
const ReasonDrained = policy.StateDrained

// whyDown tells a drained node from a down one, and gives a down node's
// probe error when this instance's probe took it down.
func whyDown(reason string, st *policy.NodeStatus) (string, string) {
	switch {
	case reason != scoring.ReasonDown:
		return reason, ""
	case st.State == policy.StateDrained:
		return ReasonDrained, ""
	case st.Vantage == "":
		return reason, st.Error
	}
	return reason, ""
}

// Explain decides one query for client c like For and says why: every
// source's location, every rung tried, every node's terms and score, the
// answer. notes head the explanation's notes.
//
// An HTTPS query is explained as the server answers it: the A and the
// AAAA decision, each explained in full under HTTPS, and the record their
// addresses make; the top level is the decision the query counts as (see
// Counted) with the record's hints as its answer.
func (d *Decider) Explain(ctx context.Context, c Client, name string, qtype uint16, notes []string) (*Explanation, error) {
	v := d.src.View()
	rec, err := Record(v, name)
	if err != nil {
		return nil, err
	}
	if qtype == dns.TypeHTTPS {
		return d.explainHTTPS(ctx, v, rec, c, notes), nil
	}
	x, _ := d.explain(ctx, v, rec, c, qtype, notes)
	return x, nil
}

// explain explains one A or AAAA decision and returns its outcome too.
func (d *Decider) explain(ctx context.Context, v *policy.View, rec *table.Record, c Client, qtype uint16, notes []string) (*Explanation, *Outcome) {
	ecs, remote := c.query()
	out := new(Outcome)
	var steps []locate.Step
	d.decide(ctx, &Query{View: v, Record: rec, QType: qtype, Remote: remote, ECS: ecs}, out, &steps)
	loc := out.Loc
	v, rec = out.View, out.Record
	dc, traces := &out.Decision, v.Trace(policyQuery(out))

	x := &Explanation{Name: rec.Name, Type: dns.TypeToString[qtype], Tier: dc.Tier.String(), TTL: out.TTL, TTLReason: out.TTLReason, Policy: out.Policy(),
		Contenders: dc.Candidates, PerSubnet: dc.PerSubnet, Notes: append([]string(nil), notes...)}
	x.Client = ExplainedClient{Address: out.Client.String(), From: "remote", Subnet: loc.Key.Prefix().String()}
	if out.FromECS {
		x.Client.From = "ecs"
	}
	if ecs != nil {
		x.Client.ECS = c.String()
		if !out.FromECS {
			x.Notes = append(x.Notes, "the ECS prefix is shorter than ecs_min_prefix: the server would decide for the resolver's address, taken here to be the same")
		}
		scope := out.Scope
		x.Scope = &scope
	}
	x.Location = explainedLocation(loc, steps)
	if p := out.Population; p != nil {
		x.Population = explainedPopulation(p, out)
		x.Notes = append(x.Notes, fmt.Sprintf("the query has no usable ECS: decided for the population of resolver %s at %s, whose node wins for %.0f%% of its %.0f clients",
			p.Resolver, x.Population.Place, 100*out.PopulationShare, p.Samples))
	}
	if out.InCanary {
		x.Notes = append(x.Notes, "the client's subnet is in the canary: decided with "+v.Table.Path)
	}

	winner := ""
	if dc.Winner != nil {
		winner = dc.Winner.ID
	}
	x.Node = winner
	seen := map[int]bool{}
	status := v.StatusFor(policyQuery(out).Client.ISP)
	for _, t := range traces {
		seen[t.Node] = true
		n := &v.Nodes[t.Node]
		en := ExplainedNode{ID: n.ID, Tier: t.Tier.String(), State: status[t.Node].State, Vantage: status[t.Node].Vantage, Usable: t.Usable,
			Reason: t.Reason, Load: n.Load, Cost: n.Cost, Score: round(t.Score), Winner: n.ID == winner,
			Terms: map[string]float64{}}
		en.Reason, en.Error = whyDown(t.Reason, &status[t.Node])
		if t.DistanceKm >= 0 {
			km := round(t.DistanceKm)
			en.DistanceKm = &km
		}
		if t.RTTMs >= 0 {
			ms := round(t.RTTMs)
			en.RTTMs = &ms
		}
		for i, name := range scoring.TermNames() {
			en.Terms[name] = round(t.Terms[i])
		}
		x.Candidates = append(x.Candidates, en)
	}
	for _, i := range append(append([]int(nil), rec.V4...), rec.V6...) {
		if !seen[i] {
			seen[i] = true
			n := &v.Nodes[i]
			x.Candidates = append(x.Candidates, ExplainedNode{ID: n.ID, State: status[i].State, Vantage: status[i].Vantage, Reason: ReasonFamily,
				Load: n.Load, Cost: n.Cost})
		}
	}
	x.Tiers = explainedTiers(traces, v.Nodes, dc.Tier, v.Params.LadderFor(qtype == dns.TypeAAAA))

	x.Answer = []ExplainedRR{}
	for _, st := range steps {
		if st.Source == "online" && st.Final {
			x.Notes = append(x.Notes, "the online API placed the client: the server asks it in the background and uses its answer from the next query for this /24 on")
		}
	}
	x.Rcode = dns.RcodeToString[dns.RcodeSuccess]
	switch {
	case dc.Winner == nil:
		x.Notes = append(x.Notes, "no node of the record has an address of this type: NODATA")
	case out.Servfail:
		x.Rcode = dns.RcodeToString[dns.RcodeServerFailure]
	case dc.Tier == scoring.TierFallback:
		x.Notes = append(x.Notes, "no node of the record is usable: the record's fallback answers")
		x.Answer = append(x.Answer, ExplainedRR{CNAME: out.CNAME()})
	case out.CNAME() != "":
		x.Answer = append(x.Answer, ExplainedRR{Node: dc.Winner.ID, CNAME: out.CNAME()})
	default:
		for n, a := range out.Addresses() {
			x.Answer = append(x.Answer, ExplainedRR{Node: n.ID, Address: a.String()})
		}
	}
	return x, out
}

// explainHTTPS explains an HTTPS query.
func (d *Decider) explainHTTPS(ctx context.Context, v *policy.View, rec *table.Record, c Client, notes []string) *Explanation {
	x4, out4 := d.explain(ctx, v, rec, c, dns.TypeA, notes)
	x6, out6 := d.explain(ctx, v, rec, c, dns.TypeAAAA, notes)
	if rec.HTTPS == nil {
		// The server answers NODATA without deciding.
		x := &Explanation{Name: rec.Name, Type: dns.TypeToString[dns.TypeHTTPS], Client: x4.Client, Location: x4.Location,
			Tiers: []ExplainedTier{}, Candidates: []ExplainedNode{}, Policy: x4.Policy, Tier: scoring.TierNone.String(),
			Answer: []ExplainedRR{}, Rcode: dns.RcodeToString[dns.RcodeSuccess],
			Notes: append(append([]string(nil), notes...), "the record has no https: NODATA")}
		if x4.Scope != nil {
			zero := uint8(0)
			x.Scope = &zero
		}
		return x
	}
	counted := x4
	if Counted(out4, out6) == out6 {
		counted = x6
	}
	x := *counted
	x.Type = dns.TypeToString[dns.TypeHTTPS]
	x.Notes = append([]string(nil), notes...)
	for _, part := range []*Explanation{x4, x6} {
		for _, n := range part.Notes[len(notes):] {
			if !slices.Contains(x.Notes, n) {
				x.Notes = append(x.Notes, n)
			}
		}
	}
	if x.Scope != nil {
		scope := HTTPSScope(out4, out6)
		x.Scope = &scope
	}
	h := &ExplainedHTTPS{A: x4, AAAA: x6}
	x.HTTPS = h
	x.Answer = []ExplainedRR{}
	rr := HTTPS(rec.Name, rec, out4, out6)
	switch {
	case out4.Servfail || out6.Servfail:
		x.Rcode = dns.RcodeToString[dns.RcodeServerFailure]
		return &x
	case rr == nil:
		x.Rcode = dns.RcodeToString[dns.RcodeSuccess]
		return &x
	}
	x.Rcode = dns.RcodeToString[dns.RcodeSuccess]
	h.Record = rr.String()
	x.TTL = rr.Hdr.Ttl
	for _, p := range []*Explanation{x4, x6} {
		if p.Node != "" && p.TTL == x.TTL {
			x.TTLReason = p.TTLReason
			break
		}
	}
	if rr.Priority == 0 {
		h.Mode = "alias"
		for _, p := range []*Explanation{x4, x6} {
			if len(p.Answer) == 1 && p.Answer[0].CNAME == rr.Target {
				x.Answer = append(x.Answer, p.Answer[0])
				break
			}
		}
		return &x
	}
	h.Mode = "service"
	if out4.Own() {
		x.Answer = append(x.Answer, x4.Answer...)
	}
	if out6.Own() {
		x.Answer = append(x.Answer, x6.Answer...)
	}
	return &x
}

// explainedTiers lists the rungs of the ladder in use from the top down
// to the one that answered, each with the nodes whose best rung it is.
func explainedTiers(traces []scoring.NodeTrace, nodes []scoring.Node, won scoring.Tier, l *scoring.Ladder) []ExplainedTier {
	tiers := l.Tiers()
	if won == scoring.TierFailOpen || won == scoring.TierFallback {
		tiers = append(tiers, won)
	}
	var out []ExplainedTier
	for _, t := range tiers {
		et := ExplainedTier{Tier: t.String(), Nodes: []string{}, Usable: []string{}}
		for _, tr := range traces {
			if tr.Tier == t {
				et.Nodes = append(et.Nodes, nodes[tr.Node].ID)
				if tr.Usable {
					et.Usable = append(et.Usable, nodes[tr.Node].ID)
				}
			}
		}
		out = append(out, et)
		if t == won {
			break
		}
	}
	return out
}

func explainedLocation(loc locate.Result, steps []locate.Step) ExplainedLocation {
	src := loc.Source.String()
	if loc.Source == geo.SourceDB {
		src = "geoip" // the step's name: MaxMind's databases, the Corefile's geoip and asn
	}
	el := ExplainedLocation{Source: src, Special: loc.Special, Scope: loc.Scope,
		ExplainedPlace: placeOf(&loc.Location), Sources: []ExplainedSource{}}
	for _, st := range steps {
		es := ExplainedSource{Source: st.Source, Found: st.Found, Won: st.Final, Error: st.Err}
		if st.Found {
			es.ExplainedPlace = placeOf(&st.Location)
		}
		el.Sources = append(el.Sources, es)
	}
	return el
}

func placeOf(l *geo.Location) ExplainedPlace {
	p := ExplainedPlace{Country: l.Country, Continent: l.Continent, Province: l.Province, City: l.City,
		ISP: l.ISP, ASN: l.ASN, Bits: l.Bits, ProvinceCoords: l.ProvinceCoords}
	if l.HasCoords {
		lat, lon := l.Lat, l.Lon
		p.Lat, p.Lon = &lat, &lon
	}
	return p
}

// round keeps four decimals: enough to compare, short to read.
func round(f float64) float64 { return math.Round(f*1e4) / 1e4 }
