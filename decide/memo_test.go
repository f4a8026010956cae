package decide_test

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/overrides"

	"github.com/miekg/dns"
)

// TestMemoIsExact: the server's decider, whose memo answers the ECS
// clients the precomputed table places once it saw them twice, decides
// every query as a decider without the memo, field for field, through
// health changes, overrides, pins and a canary; and the memo does answer.
func TestMemoIsExact(t *testing.T) {
	c, dir := newControl(t, "")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !c.Locator().Tabled(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("No precomputed table after a minute")
		}
	}
	ref := decide.New(c, decide.OptionsOf(c.Options()))
	decide.NoMemo(ref)

	var opts []*dns.EDNS0_SUBNET
	for i := range 24 {
		opts = append(opts, ecs(netip.AddrFrom4([4]byte{1, 0, byte(i), 0}).String()+"/24"))
	}
	opts = append(opts, ecs("1.0.1.77/32"), ecs("1.0.1.0/25"), ecs("1.0.16.0/20"), ecs("2.0.0.0/24"),
		ecs("3.9.9.0/24"), ecs("3.200.1.0/24"), ecs("9.9.9.0/24"), ecs("10.0.0.0/24"), ecs("2400::/48"))
	type question struct {
		name  string
		qtype uint16
	}
	questions := []question{{"www.example.org", dns.TypeA}, {"www.example.org", dns.TypeAAAA}, {"sh.example.org", dns.TypeA},
		{"svc.example.org", dns.TypeA}, {"alias.example.org", dns.TypeA}, {"fb.example.org", dns.TypeA}, {"v6only.example.org", dns.TypeAAAA}}
	ctx := context.Background()
	compare := func(state string) (hits int) {
		t.Helper()
		for round := range 3 {
			for _, qq := range questions {
				for _, o := range opts {
					v := c.View()
					rec, err := decide.Record(v, qq.name)
					if err != nil {
						t.Fatal(err)
					}
					q := decide.Query{View: v, Record: rec, QType: qq.qtype, Remote: udp("192.0.2.53"), ECS: o}
					if round == 2 && decide.Memoized(c.Decider(), &q) {
						hits++
					}
					var got, want decide.Outcome
					// The process cache then holds what the chain learns:
					// both read it.
					ref.Decide(ctx, &q, &want)
					c.Decider().Decide(ctx, &q, &got)
					ref.Decide(ctx, &q, &want)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s, round %d, %s %s for %v/%d:\n got %+v\nwant %+v", state, round, qq.name,
							dns.TypeToString[qq.qtype], addrOf(o), o.SourceNetmask, got, want)
					}
				}
			}
		}
		return hits
	}
	if hits := compare("initial"); hits == 0 {
		t.Error("The memo answered nothing the third time round")
	}

	// A node down: a new view, whose decisions the memo makes anew.
	c.Fix(health.NewSnapshot(map[string]health.Status{"hz-a": {State: health.StateDown}}))
	if hits := compare("hz-a down"); hits == 0 {
		t.Error("The memo answered nothing under the new view")
	}

	// An override and a pin on clients the memo holds.
	ov, err := overrides.Parse("overrides.yaml", []byte("overrides:\n"+
		"  - {cidr: 1.0.3.0/24, location: {country: CN, province: SH, isp: mobile}}\n"+
		"  - {cidr: 1.0.4.0/24, nodes: [bj]}\n"+
		"  - {cidr: 1.0.5.128/25, nodes: [sh]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Locator().SetOverrides(ov)
	compare("overrides")
	c.Locator().SetOverrides()
	compare("overrides gone")

	// With a canary in rollout the memo steps aside.
	cc := canaryControl(t, dir)
	q := decide.Query{View: cc.View(), Record: cc.View().Table.Records["www.example.org."], QType: dns.TypeA, Remote: udp("192.0.2.53"), ECS: opts[1]}
	for range 3 {
		cc.Decider().Decide(ctx, &q, new(decide.Outcome))
	}
	if decide.Memoized(cc.Decider(), &q) {
		t.Error("The memo answered under a canary")
	}
}

// addrOf is o's address, for messages.
func addrOf(o *dns.EDNS0_SUBNET) string { a, _ := netip.AddrFromSlice(o.Address); return a.String() }

// canaryControl is a control with a canary of the same table at 50%.
func canaryControl(t *testing.T, dir string) *control.Control {
	t.Helper()
	c, _ := newControl(t, "canary "+strings.ReplaceAll(dir+"/nodes.yaml", "\\", "/")+" 50\n")
	return c
}
