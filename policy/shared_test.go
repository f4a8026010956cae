package policy

import (
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/scoring"

	"github.com/miekg/dns"
)

// downFor is a fleet that sees some nodes down from some carriers.
type downFor map[string]map[string]bool // carrier -> node -> down

func (d downFor) Decide(node, carrier string) (bool, string, bool) {
	if m, ok := d[carrier]; ok {
		return m[node], carrier, true
	}
	return false, "fleet", true
}

func (d downFor) Carriers() []string {
	var out []string
	for c := range d {
		out = append(out, c)
	}
	return out
}

// TestSharedPerCarrier: a node the unicom vantage sees down is out for
// unicom clients only, cache hits included, and a drain still wins.
func TestSharedPerCarrier(t *testing.T) {
	tb := chinaTable(t)
	p := scoring.DefaultParams
	in := Inputs{Table: tb, Snapshot: health.NewSnapshot(map[string]health.Status{}), Params: &p, Now: time.Now(),
		Cache: NewCache(), Shared: downFor{"unicom": {"ZJ-telecom": true}}}
	v, _ := NewView(in)
	zj := func(isp string) Query {
		return Query{Record: tb.Records["api.example.org."], QType: dns.TypeA, Subnet: 7,
			Client: scoring.Client{Country: "CN", Province: "ZJ", ISP: isp, HasCoords: true, Lat: 30.3, Lon: 120.2}}
	}
	for round := range 3 { // the second and third are cache hits
		for _, tc := range []struct{ isp, notWant, vantage string }{{"telecom", "", ""}, {"unicom", "ZJ-telecom", "unicom"}} {
			q := zj(tc.isp)
			d := v.Decide(&q)
			if d.Winner == nil {
				t.Fatalf("round %d, %s: no winner", round, tc.isp)
			}
			if tc.notWant == "" && d.Winner.ID != "ZJ-telecom" || tc.notWant != "" && d.Winner.ID == tc.notWant {
				t.Errorf("round %d, %s client: got %s", round, tc.isp, d.Winner.ID)
			}
		}
	}
	if st := v.StatusFor("unicom"); st[nodeIndex(t, v, "ZJ-telecom")].State != StateDown || st[nodeIndex(t, v, "ZJ-telecom")].Vantage != "unicom" {
		t.Errorf("Expected ZJ-telecom down as unicom sees it, got %+v", st[nodeIndex(t, v, "ZJ-telecom")])
	}
	if st := v.StatusFor("telecom")[nodeIndex(t, v, "ZJ-telecom")]; st.State == StateDown || st.Vantage != "fleet" {
		t.Errorf("Expected ZJ-telecom usable for telecom clients by the fleet's verdict, got %+v", st)
	}
	in.Drains = map[string]Drain{"ZJ-telecom": {Drained: true}}
	v, _ = NewView(in)
	if q := zj("telecom"); v.Decide(&q).Winner.ID == "ZJ-telecom" {
		t.Error("Expected a drain to win over the fleet's verdict")
	}
}

func nodeIndex(t *testing.T, v *View, id string) int {
	i, ok := v.Table.Index(id)
	if !ok {
		t.Fatalf("no node %s", id)
	}
	return i
}
