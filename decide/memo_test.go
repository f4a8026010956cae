package decide_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
	c, dir, ref := memoControl(t)

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

	// Every node down: failing open, and fb's fallback.
	down := map[string]health.Status{}
	for _, n := range c.View().Table.Nodes {
		down[n.ID] = health.Status{State: health.StateDown}
	}
	c.Fix(health.NewSnapshot(down))
	compare("all down")
	// sh alone down: fb.example.org falls back, the rest does not.
	c.Fix(health.NewSnapshot(map[string]health.Status{"sh": {State: health.StateDown}}))
	compare("sh down")
	c.Fix(health.NewSnapshot(map[string]health.Status{"hz-a": {State: health.StateDown}}))

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

// TestMemoHolds: 20,000 clients asked in turn three times are nearly all
// answered by the memo then; a stream of new clients makes no entry.
func TestMemoHolds(t *testing.T) {
	c, _ := newControl(t, "")
	startTabled(t, c)
	v := c.View()
	ctx := context.Background()
	q := func(i int) *decide.Query {
		return &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: udp("192.0.2.53"),
			ECS: ecs(netip.AddrFrom4([4]byte{3, byte(i >> 8), byte(i), 0}).String() + "/24")}
	}
	const n = 20000
	for i := range n {
		c.Decider().Decide(ctx, q(n+i), new(decide.Outcome))
	}
	if decide.Memoized(c.Decider(), q(n)) {
		t.Error("A client asked once is in the memo")
	}
	for range 3 {
		for i := range n {
			c.Decider().Decide(ctx, q(i), new(decide.Outcome))
		}
	}
	held := 0
	for i := range n {
		if decide.Memoized(c.Decider(), q(i)) {
			held++
		}
	}
	t.Logf("The memo holds %d of %d clients", held, n)
	// Buckets of four: about 0.3% of 20,000 clients fall in one of five
	// or more; a client's first miss may be forgotten before its second.
	if held < n*99/100 {
		t.Errorf("The memo holds %d of %d clients asked three times", held, n)
	}
}

// TestMemoConcurrent: queries decided on several goroutines while the view
// changes under them are decided as without the memo, each under the view
// it read (with -race, the memo's reads and writes are checked too).
func TestMemoConcurrent(t *testing.T) {
	c, _, ref := memoControl(t)
	ctx := context.Background()
	done := make(chan struct{})
	errs := make(chan string, 4)
	var decided atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				i := (k*7 + g) % 600
				a := netip.AddrFrom4([4]byte{1, 0, byte(i), 0})
				if i >= 256 {
					a = netip.AddrFrom4([4]byte{3, 1, byte(i), 0})
				}
				v := c.View()
				q := decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: udp("192.0.2.53"), ECS: ecs(a.String() + "/24")}
				var got, want decide.Outcome
				c.Decider().Decide(ctx, &q, &got)
				ref.Decide(ctx, &q, &want)
				if !reflect.DeepEqual(got, want) {
					errs <- a.String() + ": " + winner(&got) + " against " + winner(&want)
					return
				}
				decided.Add(1)
			}
		})
	}
	for k := range 20 {
		state := health.StateUp
		if k%2 == 0 {
			state = health.StateDown
		}
		c.Fix(health.NewSnapshot(map[string]health.Status{"hz-a": {State: state}}))
		// Each client asked about five times under each view (the memo
		// answers from the third), unless a query failed.
		for n, deadline := decided.Load()+3000, time.Now().Add(time.Minute); decided.Load() < n && len(errs) == 0; {
			if time.Now().After(deadline) {
				t.Fatal("The queries stopped")
			}
			runtime.Gosched()
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// memoControl is a started control with its precomputed table, its
// directory, and a decider of its without the memo, to compare with.
func memoControl(t *testing.T) (*control.Control, string, *decide.Decider) {
	t.Helper()
	c, dir := newControl(t, "")
	startTabled(t, c)
	ref := decide.New(c, decide.OptionsOf(c.Options()))
	decide.NoMemo(ref)
	return c, dir, ref
}

// startTabled starts c and waits for its precomputed table.
func startTabled(tb testing.TB, c *control.Control) {
	tb.Helper()
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !c.Locator().Tabled(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatal("No precomputed table after a minute")
		}
	}
}

// TestMemoOutlivesViews: after a new view of the same table (a node's
// health) the memo still knows its clients' locations, decides them under
// the view and keeps the same entry where the decision did not change;
// after a reload it knows them too, and holds them again after one
// query, keeping the entries of the decisions that did not change. Every
// decision is the one made without the memo.
func TestMemoOutlivesViews(t *testing.T) {
	c, dir, ref := memoControl(t)
	ctx := context.Background()
	// Clients of hz-a, and of the other nodes.
	var nets []string
	for i := range 24 {
		nets = append(nets, netip.AddrFrom4([4]byte{1, 0, byte(i), 0}).String()+"/24")
	}
	nets = append(nets, "2.0.0.0/24", "3.9.9.0/24", "3.200.1.0/24", "9.9.9.0/24")
	query := func(i int) *decide.Query {
		v := c.View()
		return &decide.Query{View: v, Record: v.Table.Records["www.example.org."], QType: dns.TypeA, Remote: udp("192.0.2.53"),
			ECS: ecs(nets[i])}
	}
	n := len(nets)
	decideOnce := func(state string, i int) {
		t.Helper()
		var got, want decide.Outcome
		q := query(i)
		c.Decider().Decide(ctx, q, &got)
		ref.Decide(ctx, q, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s, client %d:\n got %+v\nwant %+v", state, i, got, want)
		}
	}
	entries := func() []any {
		var es []any
		for i := range n {
			es = append(es, decide.MemoEntry(c.Decider(), query(i)))
		}
		return es
	}
	for range 3 {
		for i := range n {
			decideOnce("initial", i)
		}
	}
	before := entries()
	for i := range n {
		if !decide.Memoized(c.Decider(), query(i)) {
			t.Fatalf("Client %d is not in the memo", i)
		}
	}

	// step makes a new view with change, then checks that the memo
	// places every client and holds it after one query; it returns how
	// many entries are those of before.
	step := func(state string, change func()) (kept int) {
		t.Helper()
		v := c.View()
		change()
		if c.View() == v {
			t.Fatalf("%s: no new view", state)
		}
		for i := range n {
			if !decide.Placed(c.Decider(), query(i)) {
				t.Fatalf("%s: the memo does not place client %d", state, i)
			}
			decideOnce(state, i)
			if !decide.Memoized(c.Decider(), query(i)) {
				t.Fatalf("%s: client %d not in the memo after one query", state, i)
			}
			decideOnce(state+", from the memo", i)
		}
		after := entries()
		for i := range n {
			if after[i] == before[i] {
				kept++
			}
		}
		before = after
		return kept
	}
	// bj6 is not one of www's nodes: every entry stays.
	if kept := step("bj6 down", func() {
		c.Fix(health.NewSnapshot(map[string]health.Status{"bj6": {State: health.StateDown}}))
	}); kept != n {
		t.Errorf("bj6 down: %d of %d entries kept", kept, n)
	}
	// hz-a down: the clients it served get new entries.
	kept := step("hz-a down", func() {
		c.Fix(health.NewSnapshot(map[string]health.Status{"hz-a": {State: health.StateDown}}))
	})
	if kept == 0 || kept == n {
		for i := range n {
			o := decideQ(t, c, "www.example.org", dns.TypeA, udp("192.0.2.53"), query(i).ECS)
			t.Logf("%d: %s %v", i, winner(o), o.Decision.Decision)
		}
		t.Errorf("hz-a down: %d of %d entries kept; want some, not all", kept, n)
	}
	// A reload that moves edge, not one of www's nodes: new records, the
	// same decisions.
	if kept := step("reload", func() {
		path := filepath.Join(dir, "nodes.yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// edge, not one of www's nodes, moves.
		const edge = "{id: edge, cname: edge.cdn.example.net, country: CN, province: ZJ, isp: telecom, lat: 30.27,"
		changed := strings.Replace(string(data), edge, strings.Replace(edge, "30.27", "30.28", 1), 1)
		if changed == string(data) {
			t.Fatal("edge's line is not in the table")
		}
		if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		c.Reload() // a change is read on two checks in a row
		c.Reload()
	}); kept != n {
		t.Errorf("reload: %d of %d entries kept", kept, n)
	}
}
