package control

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/runstate"
	"github.com/gslbdns/gslb/table"

	"github.com/redis/go-redis/v9"
)

// member is this process's membership of one fleet, shared by the loads of
// the Corefile that name it alike, so that a reload keeps the membership.
type member struct {
	key    string
	f      *fleet.Fleet
	client redis.UniversalClient
	refs   int
	ctl    atomic.Pointer[Control] // the instance that applies the fleet's state
	done   chan struct{}
	pool   *health.Pool // gated by the leases; nil: no probers limit
	// The canary counts handed to the fleet: of which generation, and up
	// to which local counts. The report loop alone uses them.
	counting string
	counted  [4]uint64
}

var members = struct {
	sync.Mutex
	m map[string]*member
}{m: map[string]*member{}}

// memberKey is what a reload must keep for the membership to carry on.
func memberKey(o *config.Options) string {
	// Every field, so that a new option cannot be forgotten here; the
	// line alone moves when the Corefile is edited elsewhere.
	f, r := *o.Fleet, *o.Redis
	f.Line = 0
	sum := sha256.Sum256(fmt.Appendf(nil, "%+v %+v", f, r))
	return fmt.Sprintf("%x", sum[:8])
}

// joinFleet makes c the member that applies its fleet's state, starting
// the membership when no earlier load holds it: it reads the shared state
// (at most the fleet's timeout) before c serves. Callers hold c.mu.
func (c *Control) joinFleet() error {
	o := c.opts
	if o.Fleet == nil || c.member != nil {
		return nil
	}
	key := memberKey(o)
	members.Lock()
	m := members.m[key]
	if m == nil {
		rc := *o.Redis
		rc.Timeout = max(rc.Timeout, fleet.DefaultTimeout) // background calls only
		m = &member{key: key, client: locate.NewRedisClient(&rc), done: make(chan struct{})}
		interval := probeInterval(c.table)
		f, err := fleet.Start(fleet.Config{
			Name: o.Fleet.Name, Member: o.Fleet.Member,
			Vantage: fleet.Vantage{Carrier: o.Fleet.Carrier, Province: o.Fleet.Province},
			Client:  m.client, Timeout: fleet.DefaultTimeout,
			Quorum: o.Fleet.Quorum, Probers: o.Fleet.Probers, ProbeInterval: interval,
			Seed:       seedOf(c.seedState(), o.Fleet.Member),
			OnState:    m.onState,
			OnConflict: onConflict,
			OnVerdicts: m.onVerdicts,
			OnRollback: m.onRollback,
		})
		if err != nil {
			members.Unlock()
			m.client.Close()
			return fmt.Errorf("%s:%d - Error during setup: fleet: %w", o.File, o.Fleet.Line, err)
		}
		m.f = f
		members.m[key] = m
		go m.reportLoop(interval/2, m.done)
		if o.Fleet.Probers > 0 {
			m.pool = c.pool()
			m.pool.SetGate(f.Probing) // the lease holders probe
		}
		log.Infof("Fleet %s: member %s, vantage %s", o.Fleet.Name, o.Fleet.Member, fleet.Vantage{Carrier: o.Fleet.Carrier, Province: o.Fleet.Province})
	}
	m.refs++
	members.Unlock()
	m.ctl.Store(c)
	c.member = m
	c.adoptFleet(m.f.State())
	return nil
}

// seedState is the admin state with the origins the state file kept.
// Callers hold c.mu.
func (c *Control) seedState() *admin.State {
	st := c.state()
	st.Origins = c.seedOrigins
	return st
}

// leaveFleet gives c's hold up; the last one leaves the fleet.
func (c *Control) leaveFleet() {
	c.mu.Lock()
	m := c.member
	c.mu.Unlock()
	if m == nil {
		return
	}
	m.ctl.CompareAndSwap(c, nil)
	members.Lock()
	m.refs--
	last := m.refs == 0
	if last {
		delete(members.m, m.key)
	}
	members.Unlock()
	if last {
		if m.pool != nil {
			m.pool.SetGate(nil)
		}
		close(m.done)
		m.f.Close()
		m.client.Close()
	}
}

func (m *member) onState(s *fleet.State) {
	c := m.ctl.Load()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adoptFleet(s)
}

func onConflict(cf fleet.Conflict) {
	log.Warningf("Fleet: %s: the change by %s at %s lost to the one by %s at %s", cf.Key,
		cf.Loser.Origin.Member, cf.Loser.Origin.Time.Format(time.RFC3339Nano),
		cf.Winner.Origin.Member, cf.Winner.Origin.Time.Format(time.RFC3339Nano))
}

// adoptFleet makes the fleet's state this instance's: it serves it from the
// next view on, and keeps it in the state file as the last known copy.
// Callers hold c.mu, or own c alone.
func (c *Control) adoptFleet(s *fleet.State) {
	st := c.fromFleet(s)
	st.CanarySalt = c.salt.Stored
	c.adopt(st)
	c.adoptCanary(s)
	c.shared = sharedEntries(c.state())
	c.saveLogged()
	c.applyOverrides(time.Now())
	c.publish()
}

// adoptCanary applies the fleet's canary share: no entry is the Corefile's
// share (another member reset it), unless a rollback here is being saved.
func (c *Control) adoptCanary(s *fleet.State) {
	cn := c.canary.Load()
	if cn == nil {
		return
	}
	var e admin.CanaryEntry
	if en, ok := s.Get(runstate.CanaryKey); ok && json.Unmarshal(en.Value, &e) == nil && e.Identity == cn.Identity {
		if e.Autopilot != nil && !cn.RestoreAutopilot(&e) {
			// A step decided before its member saw this rollback: the
			// rollback is shared again, and wins as the later change.
			log.Warningf("Fleet: canary %s: a step by another member would undo this rollback: shared again", cn.Opts.File)
			if err := c.saveState(c.state(), runstate.CanaryKey); err != nil {
				log.Errorf("Fleet: canary %s: %v", cn.Opts.File, err)
			}
			return
		} else if e.Autopilot != nil {
			return // the fleet's step: one decision holds for every member
		}
		if !e.RolledBack {
			cn.SetPercent(e.Percent) // clears a rollback: a member started a new experiment
		}
		return
	}
	if back, _ := cn.RolledBack(); back && c.rolledBack.Load() || cn.AutopilotEntry() != nil {
		return // a rollback being saved, or the autopilot's own step: this member shares it
	}
	if cn.Share() != canary.PercentToShare(cn.Opts.Percent) {
		cn.SetPercent(cn.Opts.Percent)
	}
}

// fromFleet is the admin state the fleet's entries say; entries that do not
// hold against this node table are left out, and logged.
func (c *Control) fromFleet(s *fleet.State) *admin.State {
	entries := make(map[string]json.RawMessage, len(s.Entries))
	for k, e := range s.Entries {
		if !e.Deleted() && runstate.Shared(k) {
			entries[k] = e.Value
		}
	}
	rs, skipped := runstate.Decode(entries, c.known(c.table))
	for _, sk := range skipped {
		switch {
		case sk.Bad && c.member != nil:
			c.member.f.Reject(sk.Key, sk.Reason)
		default:
			if ok, dropped := fleetIgnored.Allow(10 * time.Second); ok {
				log.Infof("Fleet: %s: ignored here%s", sk, ratelog.Note(dropped))
			}
		}
	}
	return &admin.State{State: *rs}
}

// fleetIgnored bounds the lines of shared entries this node table does not
// take, which every state change would repeat.
var fleetIgnored ratelog.Limit

// sharedEntries is an admin state as the fleet's entries.
func sharedEntries(st *admin.State) map[string]json.RawMessage {
	return runstate.Encode(&st.State, true)
}

// seedOf is the state file as the fleet's last known state. Each entry
// keeps the origin the file has for it, so that a change made while
// Redis was out of reach wins when it is the later one; an entry without
// one (an older file) is older than any change the fleet made, and fills
// only what Redis lacks.
func seedOf(st *admin.State, member string) *fleet.State {
	s := &fleet.State{Entries: map[string]fleet.Entry{}}
	for k, v := range sharedEntries(st) {
		o := fleet.Origin{Member: member}
		if so, ok := st.Origins[k]; ok && !so.Deleted {
			o = fleet.Origin{Member: so.Member, Time: so.Time.Time}
		}
		s.Entries[k] = fleet.Entry{Value: v, Origin: o}
	}
	for k, so := range st.Origins {
		if _, live := s.Entries[k]; !live && so.Deleted {
			s.Entries[k] = fleet.Entry{Origin: fleet.Origin{Member: so.Member, Time: so.Time.Time}}
		}
	}
	return s
}

// changes is what the fleet must be told for the shared entries to be
// next: the keys that changed since this member last shared or adopted
// them, and the touched ones whatever they hold. Callers hold c.mu.
func (c *Control) changes(next map[string]json.RawMessage, touched []string) []fleet.Change {
	var changes []fleet.Change
	for _, k := range slices.Sorted(maps.Keys(next)) {
		if prev, ok := c.shared[k]; !ok || string(prev) != string(next[k]) || slices.Contains(touched, k) {
			changes = append(changes, fleet.Change{Key: k, Value: next[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.shared)) {
		if _, ok := next[k]; !ok {
			changes = append(changes, fleet.Change{Key: k})
		}
	}
	for _, k := range touched {
		if _, ok := next[k]; !ok && c.shared[k] == nil {
			changes = append(changes, fleet.Change{Key: k}) // a deletion, even of what this member never saw
		}
	}
	return changes
}

// originsOf is the origin of each shared entry, and of each deletion the
// fleet remembers, with changes made: what the state file keeps of them.
// Callers hold c.mu.
func (c *Control) originsOf(live map[string]json.RawMessage, changes []fleet.Change) map[string]admin.KeyOrigin {
	f := c.member.f
	out := map[string]admin.KeyOrigin{}
	for k, e := range f.State().Entries {
		if _, ok := live[k]; (ok || e.Deleted()) && !e.Origin.Time.IsZero() {
			out[k] = admin.KeyOrigin{Member: e.Origin.Member, Time: yamlfile.Time{Time: e.Origin.Time}, Deleted: !ok}
		}
	}
	for _, ch := range changes {
		out[ch.Key] = admin.KeyOrigin{Member: f.Member(), Time: yamlfile.Time{Time: ch.Time}, Deleted: ch.Value == nil}
	}
	return out
}

// origin is where the fleet's entry of key came from; nil: not shared.
func (c *Control) origin(key string) *admin.Origin {
	if c.member == nil {
		return nil
	}
	e, ok := c.member.f.State().Entries[key]
	if !ok || e.Origin.Time.IsZero() {
		return nil
	}
	return &admin.Origin{Member: e.Origin.Member, Time: e.Origin.Time}
}

// pools are the probe pools by source address: the process's for the
// system's, one more per probe_source.
var pools = struct {
	sync.Mutex
	m map[netip.Addr]*health.Pool
}{m: map[netip.Addr]*health.Pool{}}

// pool is the probe pool of c's probe source.
func (c *Control) pool() *health.Pool {
	if c.opts.Fleet == nil || !c.opts.Fleet.ProbeSource.IsValid() {
		return health.Shared()
	}
	src := c.opts.Fleet.ProbeSource
	pools.Lock()
	defer pools.Unlock()
	p := pools.m[src]
	if p == nil {
		p = health.NewPool(health.Options{Source: src})
		pools.m[src] = p
	}
	return p
}

// probeInterval is the longest probe interval of t: a verdict counts for
// three of them.
func probeInterval(t *table.Table) time.Duration {
	var d time.Duration
	for _, p := range t.Probes {
		d = max(d, time.Duration(p.Spec.Interval))
	}
	if d == 0 {
		return health.DefaultInterval
	}
	return d
}

// shared is the fleet's verdicts as a view reads them.
type shared struct {
	v        *fleet.Verdicts
	carriers []string
}

func (s *shared) Decide(node, carrier string) (bool, string, bool) {
	d, ok := s.v.Decide(node, carrier)
	return d.Down, d.Vantage, ok
}

func (s *shared) Carriers() []string { return s.carriers }

// sharedVerdicts is what the next view reads of the fleet's verdicts, and
// a key that changes when they do for t's nodes; nil when this instance
// answers from its own probes (no fleet, or Redis out of reach for longer
// than a verdict counts). Callers hold c.mu.
func (c *Control) sharedVerdicts(t *table.Table) (*shared, string) {
	if c.member == nil || c.fixed != nil || c.member.f.Stats().Isolated {
		return nil, ""
	}
	v := c.member.f.Verdicts()
	var key strings.Builder
	set := map[string]bool{}
	for _, n := range t.Nodes {
		d, ok := v.Decide(n.ID, "")
		if !ok {
			continue
		}
		fmt.Fprintf(&key, "%s %v;", n.ID, d.Down)
		for _, c := range slices.Sorted(maps.Keys(v.Carriers(n.ID))) {
			set[c] = true
			cd, _ := v.Decide(n.ID, c)
			fmt.Fprintf(&key, "%s %v;", c, cd.Down)
		}
	}
	return &shared{v: v, carriers: slices.Sorted(maps.Keys(set))}, key.String()
}

// reportFleet publishes this instance's verdicts of the stable table's
// probed nodes. Callers hold c.mu.
func (c *Control) reportFleet(snap *health.Snapshot) {
	if c.member == nil || c.fixed != nil {
		return
	}
	f := c.member.f
	ids := make([]string, 0, len(c.table.Probes))
	for _, p := range c.table.Probes {
		ids = append(ids, p.ID)
	}
	f.SetNodes(ids)
	own := map[string]fleet.NodeVerdict{}
	for _, p := range c.table.Probes {
		if !f.Probing(p.ID) {
			continue // another member holds the lease: this verdict is old
		}
		st, ok := snap.Status(p.ID)
		if !ok || st.State != health.StateUp && st.State != health.StateDown {
			continue
		}
		own[p.ID] = fleet.NodeVerdict{Down: st.State == health.StateDown, Load: st.Load}
	}
	f.Report(own)
}

// onVerdicts rebuilds the view when the fleet's verdicts of its nodes
// changed.
func (m *member) onVerdicts(*fleet.Verdicts) {
	c := m.ctl.Load()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, key := c.sharedVerdicts(c.table); key != c.sharedKey {
		c.publish()
	}
}

// reportLoop reports the verdicts every half interval, so that they stay
// fresh while nothing changes.
func (m *member) reportLoop(every time.Duration, done <-chan struct{}) {
	defer recovery.Guard("fleet report")
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if c := m.ctl.Load(); c != nil {
			recovery.Do("fleet report", func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.reportFleet(c.checker.Snapshot())
			})
			recovery.Do("fleet canary", func() { m.countCanary(c) })
		}
	}
}

// policyShared is s for a view: nil stays nil.
func policyShared(s *shared) policy.Shared {
	if s == nil {
		return nil
	}
	return s
}

// canaryWindow is the one window of a canary's fleet-wide counts: they add
// up over its life, like a lone instance's.
const canaryWindow = 30 * 24 * time.Hour

// countGeneration names the fleet's counts of c's canary: its identity and
// the last share an operator set, so that a new experiment counts afresh.
func (c *Control) countGeneration(cn *canary.Rollout) string {
	gen := cn.Identity
	if e, ok := c.member.f.State().Get(runstate.CanaryKey); ok {
		gen += "-" + strconv.FormatInt(e.Origin.Time.UnixNano(), 36)
	}
	return gen
}

// countCanary adds this member's new canary counts to the fleet's, and
// decides the rollback, once for the fleet, when the totals call for it.
func (m *member) countCanary(c *Control) {
	cn := c.canary.Load()
	if cn == nil || !cn.Active() {
		return
	}
	c.mu.Lock()
	gen, since := c.countGeneration(cn), cn.StepSince()
	c.mu.Unlock()
	m.f.WatchCanary(gen)
	now := cn.Counts()
	switch {
	case m.counting == "": // the first round: everything counted so far
		m.counting = gen
	case gen != m.counting || now[0] < m.counted[0] || now[2] < m.counted[2]:
		m.counting, m.counted = gen, now // a new experiment, or counters reset: from here on
	}
	var add fleet.CanaryCounts
	add.CanarySame, add.CanaryCross = int64(now[0]-m.counted[0]), int64(now[1]-m.counted[1])
	add.StableSame, add.StableCross = int64(now[2]-m.counted[2]), int64(now[3]-m.counted[3])
	ctx := context.Background()
	total, err := m.f.CanaryAdd(ctx, gen, time.Unix(0, 0), canaryWindow, add)
	if err != nil {
		return // counted again at the next round
	}
	m.counted = now
	// Each step of the autopilot is a new generation: these are its counts.
	cn.SetFleetCounts(since, [4]uint64{uint64(total.CanarySame), uint64(total.CanaryCross), uint64(total.StableSame), uint64(total.StableCross)})
	reason, ok := cn.Judge([4]uint64{uint64(total.CanarySame), uint64(total.CanaryCross), uint64(total.StableSame), uint64(total.StableCross)})
	if !ok {
		return
	}
	if rb, won, err := m.f.TryRollback(ctx, gen, "fleet-wide "+reason); err == nil && won {
		log.Warningf("Fleet: canary %s: this member decided the rollback for the fleet", cn.Opts.File)
		m.onRollback(rb)
	}
}

// onRollback applies a rollback decided by a member: the canary rolls back
// here too, and the state says so.
func (m *member) onRollback(rb fleet.Rollback) {
	c := m.ctl.Load()
	if c == nil {
		return
	}
	cn := c.canary.Load()
	if cn == nil {
		return
	}
	c.mu.Lock()
	gen := c.countGeneration(cn)
	c.mu.Unlock()
	if rb.Identity != gen {
		return // of an earlier experiment
	}
	if cn.Apply(rb.Reason + " (decided by " + rb.Origin.Member + ")") {
		c.noteRollback()
	}
}
