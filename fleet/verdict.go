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
	expires time.Time // local clock: the report counts until then
	held    time.Time // and decides for its vantage, if it is the only one, until then
}

// Decision is the fleet's verdict of a node for clients of one carrier.
type Decision struct {
	Down      bool
	Vantage   string  // the carrier whose members decided, or VantageFleet
	DownVotes int     // members (or, for VantageFleet, carriers) that see the node down
	Votes     int     // of this many
	Load      float64 // mean load the deciding members see
	// Held: every member of Vantage went silent; these are their last
	// verdicts, kept for forgetAfter probe intervals after they were written.
	Held bool
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
// time, the member count, every report with its time, and what it
// repaired. Redis's clock bounds what any writer of these keys can do: a
// heartbeat or a report time more than ARGV[5] ms ahead of it, a time that
// is not a number, a report without a time and a key of the wrong type are
// deleted, and counted, rather than kept for ever or failing every round.
var reportScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ahead = now + tonumber(ARGV[5])
local keys, beats, reports = 0, 0, 0
local want = {'zset', 'hash', 'hash'}
for i = 1, 3 do
  local ty = redis.call('TYPE', KEYS[i])['ok']
  if ty ~= 'none' and ty ~= want[i] then
    redis.call('DEL', KEYS[i])
    keys = keys + 1
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
beats = redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. ahead, '+inf')
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[1], now)
end
local at = redis.call('HGETALL', KEYS[3])
local timed = {}
for i = 1, #at, 2 do
  local ms = tonumber(at[i+1])
  if ms == nil or ms > ahead or ms < now - tonumber(ARGV[4]) then
    redis.call('HDEL', KEYS[2], at[i])
    redis.call('HDEL', KEYS[3], at[i])
    if ms == nil or ms > ahead then reports = reports + 1 end
  else
    timed[at[i]] = true
  end
end
for _, m in ipairs(redis.call('HKEYS', KEYS[2])) do
  if not timed[m] then
    redis.call('HDEL', KEYS[2], m)
    reports = reports + 1
  end
end
return {now, redis.call('ZCARD', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), {keys, beats, reports}}
`)

// forgetAfter is how long, in probe intervals, a silent member's report
// stays in Redis, and a vantage whose members all went silent keeps its
// last verdicts (Decision.Held).
const forgetAfter = 10

// What the report script and the lease script repair, for Stats.Repaired.
const (
	RepairedKey       = "key"       // a fleet key of the wrong type, deleted
	RepairedHeartbeat = "heartbeat" // a heartbeat ahead of Redis's clock
	RepairedReport    = "report"    // a report ahead of Redis's clock, or without a time
	RepairedLease     = "lease"     // a lease without a TTL, beyond one, or held by a non-member
)

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
		f.cfg.Member, data, f.freshness().Milliseconds(), f.heldFor().Milliseconds(), f.tick().Milliseconds()).Slice()
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

// heldFor is how long a report is kept: a vantage whose members all went
// silent is decided by their last verdicts until then.
func (f *Fleet) heldFor() time.Duration { return forgetAfter * f.cfg.ProbeInterval }

func (f *Fleet) readReports(res []any) error {
	if len(res) != 5 {
		return errors.New("unexpected reply to the report script")
	}
	now, _ := res[0].(int64)
	members, _ := res[1].(int64)
	flat, _ := res[2].([]any)
	ats, _ := res[3].([]any)
	if fixed, _ := res[4].([]any); len(fixed) == 3 {
		for i, what := range []string{RepairedKey, RepairedHeartbeat, RepairedReport} {
			if n, _ := fixed[i].(int64); n > 0 {
				f.repaired(what, int(n))
			}
		}
	}
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
		age := time.Duration(now-ms) * time.Millisecond
		// A report counts for 3 of its member's intervals, and is held at
		// most until Redis forgets it, whatever interval it claims.
		fresh := min(3*time.Duration(max(r.IntervalMS, 0))*time.Millisecond, f.heldFor())
		if fresh <= 0 {
			fresh = f.freshness()
		}
		if age >= f.heldFor() {
			continue
		}
		reports = append(reports, heldReport{Report: r, expires: local.Add(fresh - age), held: local.Add(f.heldFor() - age)})
	}
	f.mu.Lock()
	f.members, f.reports, f.lastErr = int(members), reports, ""
	f.mu.Unlock()
	return nil
}

// repaired counts and logs what the scripts repaired of the fleet's keys:
// a hostile or broken writer, or clocks far apart.
func (f *Fleet) repaired(what string, n int) {
	f.mu.Lock()
	f.fixed[what] += uint64(n)
	f.mu.Unlock()
	if ok, _ := f.repairLog.Allow(time.Minute); ok {
		log.Warningf("Fleet %s: repaired %d %s entries of the fleet's Redis keys (the wrong type, a time ahead of Redis's clock, a lease without a TTL or held by a non-member): is something else writing them?",
			f.cfg.Name, n, what)
	}
}

// combine builds Verdicts from the reports still fresh at now, this
// member's own included, and calls OnVerdicts if notify.
func (f *Fleet) combine(now time.Time, notify bool) {
	f.combining.Lock() // stores in the order computed
	f.mu.Lock()
	var reports, held []Report
	for _, r := range f.reports {
		switch {
		case now.Before(r.expires):
			reports = append(reports, r.Report)
		case now.Before(r.held):
			held = append(held, r.Report)
		}
	}
	if f.own != nil && now.Sub(f.reported) <= f.freshness() {
		reports = append(reports, *f.own)
	}
	f.mu.Unlock()
	v := CombineHeld(reports, held, f.cfg.Quorum)
	v.At = now
	f.verdicts.Store(v)
	f.combining.Unlock()
	if notify && f.cfg.OnVerdicts != nil {
		f.callback(func() { f.cfg.OnVerdicts(v) })
	}
}

// Combine is the deterministic combination of fresh reports: the same
// reports give the same Verdicts on every member, whatever their order.
func Combine(reports []Report, quorum float64) *Verdicts { return CombineHeld(reports, nil, quorum) }

// CombineHeld is Combine with the reports no longer fresh but still held:
// they decide (Decision.Held) for a carrier that no fresh report sees from,
// so that a vantage whose members all died keeps its last verdicts for a
// while rather than being decided by the other carriers at once.
func CombineHeld(reports, held []Report, quorum float64) *Verdicts {
	v := combine(reports, quorum)
	if len(held) == 0 {
		return v
	}
	seen := map[string]bool{}
	for _, r := range reports {
		seen[r.Vantage.Carrier] = true
	}
	var old []Report
	for _, r := range held {
		if !seen[r.Vantage.Carrier] {
			old = append(old, r)
		}
	}
	h := combine(old, quorum)
	for id, hn := range h.nodes {
		n := v.nodes[id]
		if n == nil {
			n = &nodeVerdicts{carriers: map[string]Decision{}, fleet: Decision{Vantage: VantageFleet}}
			v.nodes[id] = n
		}
		for c, d := range hn.carriers {
			d.Held = true
			n.carriers[c] = d
		}
		n.fleet = fleetDecision(n.carriers, quorum)
	}
	return v
}

func combine(reports []Report, quorum float64) *Verdicts {
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
		n := &nodeVerdicts{carriers: make(map[string]Decision, len(carriers))}
		for c, t := range carriers {
			n.carriers[c] = Decision{Vantage: c, DownVotes: t.down, Votes: t.votes, Load: t.load / float64(t.votes), Down: byQuorum(t.down, t.votes, quorum)}
		}
		n.fleet = fleetDecision(n.carriers, quorum)
		v.nodes[id] = n
	}
	return v
}

// fleetDecision is the carriers' quorum, for clients of a carrier no
// member sees from.
func fleetDecision(carriers map[string]Decision, quorum float64) Decision {
	d := Decision{Vantage: VantageFleet}
	var load float64
	for _, c := range slices.Sorted(maps.Keys(carriers)) {
		cd := carriers[c]
		d.Votes++
		load += cd.Load
		if cd.Down {
			d.DownVotes++
		}
	}
	if d.Votes > 0 {
		d.Load = load / float64(d.Votes)
	}
	d.Down = byQuorum(d.DownVotes, d.Votes, quorum)
	return d
}

// byQuorum: down when at least the quorum's share of votes says so; a
// tie (as many down as up: one of two) is down only with a quorum below
// one half, so that with the default one prober of two never decides alone.
func byQuorum(down, votes int, quorum float64) bool {
	if votes == 0 || float64(down) < quorum*float64(votes)-1e-9 {
		return false
	}
	return 2*down != votes || quorum < 0.5
}
