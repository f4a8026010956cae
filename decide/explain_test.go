package decide_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

func client(t *testing.T, s string) decide.Client {
	t.Helper()
	c, err := decide.ParseClient(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHTTPS: an HTTPS query is an A and an AAAA decision for one client;
// the record is ServiceMode with the record's params and both decisions'
// addresses as hints, AliasMode to a cname winner, nil with no node.
func TestHTTPS(t *testing.T) {
	c, _ := newControl(t, "")
	ctx := context.Background()
	var out4, out6 decide.Outcome
	rec, err := c.Decider().ForHTTPS(ctx, client(t, "2400::/48"), "svc.example.org", &out4, &out6)
	if err != nil {
		t.Fatal(err)
	}
	if out4.QType != dns.TypeA || out6.QType != dns.TypeAAAA || out4.Client != out6.Client {
		t.Fatalf("Expected an A and an AAAA decision for one client, got %d %v and %d %v", out4.QType, out4.Client, out6.QType, out6.Client)
	}
	rr := decide.HTTPS(rec.Name, rec, &out4, &out6)
	if rr == nil || rr.Priority != 1 || rr.Target != "." || rr.Hdr.Ttl != min(out4.TTL, out6.TTL) {
		t.Fatalf("Expected a ServiceMode record with the shorter ttl, got %v", rr)
	}
	var want4, want6 []string
	for _, a := range out4.Addresses() {
		want4 = append(want4, a.String())
	}
	for _, a := range out6.Addresses() {
		want6 = append(want6, a.String())
	}
	s := rr.String()
	for _, part := range []string{"alpn=\"h2\"", "port=\"443\"", "ipv4hint=\"" + strings.Join(want4, ","), "ipv6hint=\"" + strings.Join(want6, ",")} {
		if !strings.Contains(s, part) {
			t.Errorf("Expected %s in %s", part, s)
		}
	}
	if len(want6) != 1 || want6[0] != "2001:db8::4" {
		t.Errorf("Expected bj's IPv6 address as the only v6 hint, got %v", want6)
	}
	if decide.HTTPSScope(&out4, &out6) != max(out4.Scope, out6.Scope) || decide.HTTPSScope(&out4, &out6) == 0 {
		t.Errorf("Expected the longer of the scopes %d and %d", out4.Scope, out6.Scope)
	}
	if decide.Counted(&out4, &out6) != &out4 {
		t.Errorf("Expected the A decision counted when it has a node")
	}

	// Without an IPv4 node the AAAA decision counts.
	var a4, a6 decide.Outcome
	if _, err := c.Decider().ForHTTPS(ctx, client(t, "2400::1"), "v6only.example.org", &a4, &a6); err != nil {
		t.Fatal(err)
	}
	if a4.Decision.Winner != nil || decide.Counted(&a4, &a6) != &a6 {
		t.Errorf("Expected the AAAA decision counted for an IPv6-only record")
	}
	// v6only has no https, yet both decisions are made.
	if r, _ := decide.Record(c.View(), "v6only.example.org"); r.HTTPS != nil || a6.Decision.Winner == nil || a6.Decision.Winner.ID != "bj6" {
		t.Errorf("Expected v6 without https decided all the same")
	}

	// A cname winner makes an AliasMode record to its name.
	var c4, c6 decide.Outcome
	rec, err = c.Decider().ForHTTPS(ctx, client(t, "1.0.1.7"), "alias.example.org", &c4, &c6)
	if err != nil {
		t.Fatal(err)
	}
	if rr := decide.HTTPS(rec.Name, rec, &c4, &c6); rr == nil || rr.Priority != 0 || rr.Target != "edge.cdn.example.net." || len(rr.Value) != 0 {
		t.Errorf("Expected AliasMode to the cname node's name without params, got %v", rr)
	}
	for range c4.Addresses() {
		t.Errorf("Expected a cname node to give no address")
	}

	// No node of either family: no record.
	var n4, n6 decide.Outcome
	if rr := decide.HTTPS("x.example.org.", rec, &n4, &n6); rr != nil {
		t.Errorf("Expected no record without a node, got %v", rr)
	}
	if _, err := c.Decider().ForHTTPS(ctx, client(t, "1.0.1.7"), "nope.example.org", &n4, &n6); err == nil {
		t.Errorf("Expected an unknown name refused")
	}
}

// TestExplain: the explanation is the decision Decide makes, with every
// source's say, the rungs tried, each candidate's terms and the answer;
// its JSON keys are the contract scripts read.
func TestExplain(t *testing.T) {
	c, _ := newControl(t, "")
	ctx := context.Background()
	cl := client(t, "2.0.0.0/24")
	x, err := c.Decider().Explain(ctx, cl, "www.example.org", dns.TypeA, []string{"a note"})
	if err != nil {
		t.Fatal(err)
	}
	var out decide.Outcome
	if err := c.Decider().For(ctx, cl, "www.example.org", dns.TypeA, &out); err != nil {
		t.Fatal(err)
	}
	if x.Node != winner(&out) || x.Tier != out.Decision.Tier.String() || x.TTL != out.TTL || x.Policy != out.Policy() {
		t.Errorf("Explain says %s %s ttl %d %s, Decide %s %s ttl %d %s", x.Node, x.Tier, x.TTL, x.Policy,
			winner(&out), out.Decision.Tier, out.TTL, out.Policy())
	}
	if x.Name != "www.example.org." || x.Type != "A" || x.Rcode != "NOERROR" || len(x.Notes) == 0 || x.Notes[0] != "a note" {
		t.Errorf("Unexpected header: %s %s %s notes %v", x.Name, x.Type, x.Rcode, x.Notes)
	}
	if x.Client.From != "ecs" || x.Client.ECS != "2.0.0.0/24" || x.Client.Subnet != out.Loc.Key.Prefix().String() || x.Scope == nil || *x.Scope != out.Scope {
		t.Errorf("Unexpected client %+v scope %v, want ecs 2.0.0.0/24 scope %d", x.Client, x.Scope, out.Scope)
	}
	if x.Location.Province != "SH" || x.Location.Source == "" || x.Location.Scope != out.Loc.Scope {
		t.Errorf("Unexpected location %+v", x.Location)
	}
	won := 0
	for _, s := range x.Location.Sources {
		if s.Won {
			won++
			if s.Source != x.Location.Source || !s.Found {
				t.Errorf("The winning source %+v is not the location's %s", s, x.Location.Source)
			}
		}
	}
	if won != 1 {
		t.Errorf("Expected one source won, got %d of %+v", won, x.Location.Sources)
	}
	var ids []string
	winners := 0
	for _, n := range x.Candidates {
		ids = append(ids, n.ID)
		if n.Winner {
			winners++
			if n.ID != x.Node || !n.Usable || n.Tier != x.Tier {
				t.Errorf("Winner %+v does not match the decision", n)
			}
		}
		if n.Usable && len(n.Terms) != len(scoring.TermNames()) {
			t.Errorf("%s: expected every term named, got %v", n.ID, n.Terms)
		}
	}
	slices.Sort(ids)
	if winners != 1 || strings.Join(ids, ",") != "bj,hz-a,hz-b,sh" {
		t.Errorf("Expected www's four nodes with one winner, got %v (%d winners)", ids, winners)
	}
	if len(x.Tiers) == 0 || x.Tiers[len(x.Tiers)-1].Tier != x.Tier || !slices.Contains(x.Tiers[len(x.Tiers)-1].Usable, x.Node) {
		t.Errorf("Expected the rungs down to the answering one with the winner usable, got %+v", x.Tiers)
	}
	var answer []string
	for n, a := range out.Addresses() {
		answer = append(answer, n.ID+"="+a.String())
	}
	var got []string
	for _, rr := range x.Answer {
		got = append(got, rr.Node+"="+rr.Address)
	}
	if strings.Join(got, " ") != strings.Join(answer, " ") {
		t.Errorf("Explained answer %v, decided %v", got, answer)
	}
	data, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"name"`, `"client"`, `"location"`, `"tiers"`, `"candidates"`, `"policy"`, `"tier"`, `"node"`,
		`"per_subnet"`, `"contenders"`, `"answer"`, `"rcode"`, `"ttl"`, `"scope"`, `"ttl_reason"`, `"distance_km"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("Expected the JSON key %s in %s", key, data)
		}
	}
}

// TestExplainNotes: what the server would do differently, or without an
// answer, is said: a short ECS prefix, NODATA, a node of the other family,
// an HTTPS query of a record without https.
func TestExplainNotes(t *testing.T) {
	c, _ := newControl(t, "ecs_min_prefix 20 40\n")
	ctx := context.Background()
	has := func(x *decide.Explanation, s string) bool {
		return slices.ContainsFunc(x.Notes, func(n string) bool { return strings.Contains(n, s) })
	}
	x, err := c.Decider().Explain(ctx, client(t, "2.0.0.0/16"), "www.example.org", dns.TypeA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.Client.From != "remote" || !has(x, "ecs_min_prefix") || x.Scope == nil || *x.Scope != 0 {
		t.Errorf("Expected a short ECS prefix noted with scope 0, got %+v notes %v", x.Client, x.Notes)
	}
	x, err = c.Decider().Explain(ctx, client(t, "2.0.0.1"), "sh.example.org", dns.TypeAAAA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.Node != "" || len(x.Answer) != 0 || !has(x, "NODATA") || x.Scope != nil {
		t.Errorf("Expected NODATA explained without scope, got node %q answer %v notes %v", x.Node, x.Answer, x.Notes)
	}
	if len(x.Candidates) != 1 || x.Candidates[0].ID != "sh" || x.Candidates[0].Reason != decide.ReasonFamily {
		t.Errorf("Expected sh listed for its family, got %+v", x.Candidates)
	}
	x, err = c.Decider().Explain(ctx, client(t, "2400::/48"), "v6.example.org", dns.TypeHTTPS, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	if x.Type != "HTTPS" || x.HTTPS != nil || x.Tier != scoring.TierNone.String() || !has(x, "no https") || x.Scope == nil || *x.Scope != 0 {
		t.Errorf("Expected an HTTPS query of a record without https explained as NODATA, got %+v", x)
	}
	if _, err := c.Decider().Explain(ctx, client(t, "2.0.0.1"), "nope.example.org", dns.TypeA, nil); err == nil {
		t.Errorf("Expected an unknown name refused")
	}
}

// TestExplainHTTPS: the top level is the counted decision with the
// record's hints as its answer, both halves explained in full.
func TestExplainHTTPS(t *testing.T) {
	c, _ := newControl(t, "")
	ctx := context.Background()
	x, err := c.Decider().Explain(ctx, client(t, "2400::/48"), "svc.example.org", dns.TypeHTTPS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.HTTPS == nil || x.HTTPS.Mode != "service" || x.HTTPS.A == nil || x.HTTPS.AAAA == nil {
		t.Fatalf("Expected a ServiceMode explanation with both halves, got %+v", x.HTTPS)
	}
	if x.Type != "HTTPS" || x.HTTPS.A.Type != "A" || x.HTTPS.AAAA.Type != "AAAA" || x.Node != x.HTTPS.A.Node {
		t.Errorf("Expected the A half counted, got %s %s/%s node %s", x.Type, x.HTTPS.A.Type, x.HTTPS.AAAA.Type, x.Node)
	}
	if want := len(x.HTTPS.A.Answer) + len(x.HTTPS.AAAA.Answer); len(x.Answer) != want || want == 0 {
		t.Errorf("Expected both halves' %d addresses as the answer, got %v", want, x.Answer)
	}
	rr, err := dns.NewRR(x.HTTPS.Record)
	if err != nil {
		t.Fatalf("The explained record %q does not parse: %v", x.HTTPS.Record, err)
	}
	h, ok := rr.(*dns.HTTPS)
	if !ok || h.Priority != 1 || x.TTL != h.Hdr.Ttl || x.Scope == nil || *x.Scope != max(*x.HTTPS.A.Scope, *x.HTTPS.AAAA.Scope) {
		t.Errorf("Expected the record's ttl and the longer scope, got %v ttl %d scope %v", rr, x.TTL, x.Scope)
	}
	for _, a := range x.Answer {
		if !strings.Contains(x.HTTPS.Record, a.Address) {
			t.Errorf("Answer %s is not a hint of %s", a.Address, x.HTTPS.Record)
		}
	}
	x, err = c.Decider().Explain(ctx, client(t, "1.0.1.7"), "alias.example.org", dns.TypeHTTPS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.HTTPS == nil || x.HTTPS.Mode != "alias" || len(x.Answer) != 1 || x.Answer[0].CNAME != "edge.cdn.example.net." || x.Answer[0].Node != "edge" {
		t.Errorf("Expected AliasMode to edge's name, got %+v answer %+v", x.HTTPS, x.Answer)
	}
	if netip.MustParseAddr("1.0.1.7").String() != x.Client.Address || x.Scope != nil {
		t.Errorf("Expected the resolver's own address without scope, got %+v scope %v", x.Client, x.Scope)
	}
}
