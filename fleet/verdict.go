package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// VantageFleet is Decision.Vantage when no member sees from the client's
// carrier and the vantages' majority decided.
const VantageFleet = "fleet"

// Vantage is where a member's probes see from.
type Vantage struct {
	Carrier  string `json:"carrier"` // as geo normalizes it: telecom, unicom, mobile, ...
	Province string `json:"province,omitempty"`
}

func (v Vantage) String() string {
	if v.Province == "" {
		return v.Carrier
	}
	return v.Carrier + "/" + v.Province
}

// NodeVerdict is one member's probe verdict of a node.
type NodeVerdict struct {
	Down bool    `json:"down"`
	Load float64 `json:"load,omitempty"`
}

// Report is one member's verdicts, as published.
type Report struct {
	Member     string                 `json:"member"`
	Vantage    Vantage                `json:"vantage"`
	IntervalMS int64                  `json:"interval_ms"`
	Nodes      map[string]NodeVerdict `json:"nodes"`
}

type heldReport struct {
	Report
	expires time.Time // local clock
}

// Decision is the fleet's verdict of a node for clients of one carrier.
type Decision struct {
	Down      bool
	Vantage   string  // the carrier whose members decided, or VantageFleet
	DownVotes int     // members (or, for VantageFleet, carriers) that see the node down
	Votes     int     // of this many
	Load      float64 // mean load the deciding members see
}

// Verdicts is an immutable combination of the fresh reports.
type Verdicts struct {
	At    time.Time
	nodes map[string]*nodeVerdicts
}

type nodeVerdicts struct {
	carriers map[string]Decision
	fleet    Decision
}

// Decide returns whether node is usable for clients of carrier: down when
// the members seeing from carrier see it down by quorum, or, when none
// does, when a quorum of carriers does. False when no fresh report has the
// node: the caller uses its own probes.
func (v *Verdicts) Decide(node, carrier string) (Decision, bool) {
	if v == nil {
		return Decision{}, false
	}
	n := v.nodes[node]
	if n == nil {
		return Decision{}, false
	}
	if d, ok := n.carriers[carrier]; ok {
		return d, true
	}
	return n.fleet, true
}

// Carriers returns each carrier's decision of node, for metrics and the
// API.
func (v *Verdicts) Carriers(node string) map[string]Decision {
	if v == nil || v.nodes[node] == nil {
		return nil
	}
	return maps.Clone(v.nodes[node].carriers)
}

// Report publishes this member's verdicts of the nodes it probes (with
// leases: those it holds) at the next heartbeat. Call it every probe round:
// a report is ignored 3 intervals after it was published, and a member that
// stops reporting lets its leases lapse.
func (f *Fleet) Report(nodes map[string]NodeVerdict) {
	r := &Report{Member: f.cfg.Member, Vantage: f.cfg.Vantage, IntervalMS: f.cfg.ProbeInterval.Milliseconds(), Nodes: maps.Clone(nodes)}
	f.mu.Lock()
	f.own, f.reported, f.fresh = r, f.now(), true
	f.mu.Unlock()
	f.combine(f.now(), false)
}

// Verdicts returns the current combination.
func (f *Fleet) Verdicts() *Verdicts { return f.verdicts.Load() }

// reportScript beats this member's heartbeat, publishes its report (ARGV[2]
// unless ""), forgets members silent for ARGV[4] ms, and returns Redis's
// time, the member count, and every report with its time.
var reportScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[1], now)
end
local at = redis.call('HGETALL', KEYS[3])
for i = 1, #at, 2 do
  if tonumber(at[i+1]) < now - tonumber(ARGV[4]) then
    redis.call('HDEL', KEYS[2], at[i])
    redis.call('HDEL', KEYS[3], at[i])
  end
end
return {now, redis.call('ZCARD', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
`)

// forgetAfter is how long a silent member's report stays in Redis.
const forgetAfter = 10

// round is one heartbeat: publish, read the fleet's reports, renew leases,
// and combine.
func (f *Fleet) round() {
	ctx, cancel := f.ctx()
	defer cancel()
	f.mu.Lock()
	own, reported, fresh := f.own, f.reported, f.fresh
	f.mu.Unlock()
	// Only a new report is published: its time in Redis is then that of
	// the caller's probes, whose staleness the readers judge.
	var data []byte
	if own != nil && fresh && f.now().Sub(reported) <= f.freshness() {
		var err error
		if data, err = json.Marshal(own); err != nil || len(data) > MaxReportBytes {
			f.failed("verdicts", fmt.Errorf("this member's report is %d bytes, over %d: %v", len(data), MaxReportBytes, err))
			data = nil
		}
	}
	res, err := reportScript.Run(ctx, f.cfg.Client, []string{f.keys.members, f.keys.verdicts, f.keys.verdictsAt},
		f.cfg.Member, data, f.freshness().Milliseconds(), forgetAfter*f.cfg.ProbeInterval.Milliseconds()).Slice()
	if err == nil {
		err = f.readReports(res)
	}
	if err == nil && data != nil {
		f.mu.Lock()
		if f.own == own {
			f.fresh = false
		}
		f.mu.Unlock()
	}
	if err != nil {
		f.failed("verdicts", err)
	}
	f.leaseRound(ctx, reported)
	f.combine(f.now(), true)
}

func (f *Fleet) readReports(res []any) error {
	if len(res) != 4 {
		return errors.New("unexpected reply to the report script")
	}
	now, _ := res[0].(int64)
	members, _ := res[1].(int64)
	flat, _ := res[2].([]any)
	ats, _ := res[3].([]any)
	at := map[string]int64{}
	for i := 0; i+1 < len(ats); i += 2 {
		var ms int64
		k, _ := ats[i].(string)
		v, _ := ats[i+1].(string)
		if _, err := fmt.Sscan(v, &ms); err == nil {
			at[k] = ms
		}
	}
	local := f.now()
	var reports []heldReport
	for i := 0; i+1 < len(flat); i += 2 {
		member, _ := flat[i].(string)
		body, _ := flat[i+1].(string)
		ms, ok := at[member]
		if !ok || member == f.cfg.Member || len(body) > MaxReportBytes {
			continue
		}
		var r Report
		if json.Unmarshal([]byte(body), &r) != nil || r.Member != member || r.Vantage.Carrier == "" {
			log.Debugf("Fleet %s: ignoring the bad report of %q", f.cfg.Name, member)
			continue
		}
		interval := time.Duration(r.IntervalMS) * time.Millisecond
		if interval <= 0 {
			interval = f.cfg.ProbeInterval
		}
		left := 3*interval - time.Duration(now-ms)*time.Millisecond
		if left <= 0 {
			continue
		}
		reports = append(reports, heldReport{Report: r, expires: local.Add(left)})
	}
	f.mu.Lock()
	f.members, f.reports, f.lastErr = int(members), reports, ""
	f.mu.Unlock()
	return nil
}

// combine builds Verdicts from the reports still fresh at now, this
// member's own included, and calls OnVerdicts if notify.
func (f *Fleet) combine(now time.Time, notify bool) {
	f.combining.Lock() // stores in the order computed
	f.mu.Lock()
	var reports []Report
	for _, r := range f.reports {
		if now.Before(r.expires) {
			reports = append(reports, r.Report)
		}
	}
	if f.own != nil && now.Sub(f.reported) <= f.freshness() {
		reports = append(reports, *f.own)
	}
	f.mu.Unlock()
	v := Combine(reports, f.cfg.Quorum)
	v.At = now
	f.verdicts.Store(v)
	f.combining.Unlock()
	if notify && f.cfg.OnVerdicts != nil {
		f.callback(func() { f.cfg.OnVerdicts(v) })
	}
}

// Combine is the deterministic combination of fresh reports: the same
// reports give the same Verdicts on every member, whatever their order.
func Combine(reports []Report, quorum float64) *Verdicts {
	reports = slices.Clone(reports)
	slices.SortFunc(reports, func(a, b Report) int { return strings.Compare(a.Member, b.Member) })
	type tally struct {
		down, votes int
		load        float64
	}
	per := map[string]map[string]*tally{} // node -> carrier -> tally
	for _, r := range reports {
		for _, id := range slices.Sorted(maps.Keys(r.Nodes)) {
			nv := r.Nodes[id]
			if per[id] == nil {
				per[id] = map[string]*tally{}
			}
			t := per[id][r.Vantage.Carrier]
			if t == nil {
				t = &tally{}
				per[id][r.Vantage.Carrier] = t
			}
			t.votes++
			t.load += nv.Load
			if nv.Down {
				t.down++
			}
		}
	}
	v := &Verdicts{nodes: make(map[string]*nodeVerdicts, len(per))}
	for id, carriers := range per {
		n := &nodeVerdicts{carriers: make(map[string]Decision, len(carriers)), fleet: Decision{Vantage: VantageFleet}}
		var load float64
		for _, c := range slices.Sorted(maps.Keys(carriers)) {
			t := carriers[c]
			d := Decision{Vantage: c, DownVotes: t.down, Votes: t.votes, Load: t.load / float64(t.votes), Down: byQuorum(t.down, t.votes, quorum)}
			n.carriers[c] = d
			n.fleet.Votes++
			load += d.Load
			if d.Down {
				n.fleet.DownVotes++
			}
		}
		n.fleet.Load = load / float64(n.fleet.Votes)
		n.fleet.Down = byQuorum(n.fleet.DownVotes, n.fleet.Votes, quorum)
		v.nodes[id] = n
	}
	return v
}

// byQuorum: down when at least the quorum's share of votes says so.
func byQuorum(down, votes int, quorum float64) bool {
	return votes > 0 && float64(down) >= quorum*float64(votes)-1e-9
}
