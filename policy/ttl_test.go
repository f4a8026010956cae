package policy

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

func ttlTable(t *testing.T) *table.Table {
	t.Helper()
	y := "nodes:\n" +
		"  - {id: hz, ipv4: [192.0.2.1], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n" +
		"  - {id: sh, ipv4: [192.0.2.2], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}\n" +
		"records:\n  - name: www.example.org\n  - name: img.example.org\n    ttl: [120, 15]\n"
	tb, err := table.Parse("t.yaml", []byte(y), zones, 300)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// An answer that may change within MAX gets MIN and says why; one that
// used an expiring pin or override gets the time to its end, at least
// MIN; a stable one gets MAX. Without a MIN every answer gets MAX.
func TestAdaptiveTTL(t *testing.T) {
	tb := ttlTable(t)
	now := time.Unix(1_800_000_000, 0)
	hz := scoring.Client{Country: "CN", Continent: "AS", Province: "ZJ", ISP: "telecom", HasCoords: true, Lat: 30.27, Lon: 120.16}
	shed := scoring.DefaultParams
	shed.ShedLow, shed.ShedHigh = 0.6, 0.9
	pin := func(in time.Duration) *overrides.Entry {
		return &overrides.Entry{Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Nodes: []string{"sh"}, Expires: now.Add(in)}
	}
	for _, tc := range []struct {
		name     string
		status   map[string]health.Status
		params   *scoring.Params
		pin      *overrides.Entry
		placed   *overrides.Entry
		record   string
		min      uint32
		ttl      uint32
		reason   string
		volatile Volatility
	}{
		{name: "stable", min: 30, ttl: 300, reason: TTLStable},
		{name: "probe failed once", status: map[string]health.Status{"hz": {State: health.StateUp, Fails: 1}}, min: 30, ttl: 30, reason: TTLProbeFailed, volatile: ProbeFailed},
		{name: "another node's failure", status: map[string]health.Status{"sh": {State: health.StateUp, Fails: 2}}, min: 30, ttl: 300, reason: TTLStable},
		{name: "ramping back", status: map[string]health.Status{"hz": {State: health.StateUp, From: health.StateDown, Since: now.Add(-10 * time.Second)}}, min: 30, ttl: 30, reason: TTLRamping, volatile: Ramping},
		{name: "a farther node ramping", status: map[string]health.Status{"sh": {State: health.StateUp, From: health.StateDown, Since: now.Add(-10 * time.Second)}}, min: 30, ttl: 300, reason: TTLStable},
		{name: "a farther node shedding", status: map[string]health.Status{"sh": {State: health.StateUp, Load: 0.7, HasLoad: true}}, params: &shed, min: 30, ttl: 300, reason: TTLStable},
		{name: "shedding", status: map[string]health.Status{"hz": {State: health.StateUp, Load: 0.7, HasLoad: true}}, params: &shed, min: 30, ttl: 30, reason: TTLShedding, volatile: Shedding},
		{name: "fail open", status: map[string]health.Status{"hz": {State: health.StateDown}, "sh": {State: health.StateDown}}, min: 30, ttl: 30, reason: TTLFailOpen, volatile: FailingOpen},
		{name: "pin ends in 20s", pin: pin(20 * time.Second), min: 10, ttl: 20, reason: TTLExpiry},
		{name: "pin ends in 5s", pin: pin(5 * time.Second), min: 10, ttl: 10, reason: TTLExpiry},
		{name: "pin ends in 2h", pin: pin(2 * time.Hour), min: 10, ttl: 300, reason: TTLStable},
		{name: "location override ends in 90s", placed: &overrides.Entry{Expires: now.Add(90*time.Second - time.Millisecond)}, min: 30, ttl: 90, reason: TTLExpiry},
		{name: "record's own min", record: "img.example.org.", status: map[string]health.Status{"hz": {State: health.StateUp, Fails: 1}}, min: 30, ttl: 15, reason: TTLProbeFailed, volatile: ProbeFailed},
		{name: "no min: today's ttl", status: map[string]health.Status{"hz": {State: health.StateUp, Fails: 1}}, ttl: 300, reason: TTLProbeFailed, volatile: ProbeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.params
			if p == nil {
				p = &scoring.DefaultParams
			}
			v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(tc.status), Params: p, Serial: 1, Now: now, Cooldown: time.Minute, Cache: NewCache()})
			name := tc.record
			if name == "" {
				name = "www.example.org."
			}
			q := Query{Record: tb.Records[name], QType: dns.TypeA, Client: hz, Subnet: 42, Pin: tc.pin, Placed: tc.placed}
			for range 2 { // a miss, then from the cache
				d := v.Decide(&q)
				if d.Volatile != tc.volatile {
					t.Errorf("Volatile %s, want %s", d.Volatile, tc.volatile)
				}
				if ttl, reason := d.TTL(&q, tc.min, now); ttl != tc.ttl || reason != tc.reason {
					t.Errorf("TTL %d (%s), want %d (%s)", ttl, reason, tc.ttl, tc.reason)
				}
			}
		})
	}
}

// The probe history reaches the view's nodes, for the stability term.
func TestViewHistory(t *testing.T) {
	tb := ttlTable(t)
	v, _ := NewView(Inputs{Table: tb, Snapshot: health.NewSnapshot(map[string]health.Status{"sh": {State: health.StateUp, Fails: 3, Flaps: 2}}),
		Params: &scoring.DefaultParams, Now: time.Now()})
	if n := v.Nodes[1]; n.Fails != 3 || n.Flaps != 2 || v.Nodes[0].Fails != 0 {
		t.Errorf("Nodes %+v", v.Nodes)
	}
}
