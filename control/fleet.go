package control

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/overrides"

	"github.com/redis/go-redis/v9"
)

// The fleet's keys of the admin state.
const (
	drainPrefix = "drain/"
	pinPrefix   = "pin/"
	canaryKey   = "canary"
)

// member is this process's membership of one fleet, shared by the loads of
// the Corefile that name it alike, so that a reload keeps the membership.
type member struct {
	key    string
	f      *fleet.Fleet
	client redis.UniversalClient
	refs   int
	ctl    atomic.Pointer[Control] // the instance that applies the fleet's state
}

var members = struct {
	sync.Mutex
	m map[string]*member
}{m: map[string]*member{}}

// memberKey is what a reload must keep for the membership to carry on.
func memberKey(o *config.Options) string {
	f, r := o.Fleet, o.Redis
	sum := sha256.Sum256(fmt.Appendf(nil, "%q %q %q %q %v %v %d %q %q %d %q %v",
		f.Name, f.Member, f.Carrier, f.Province, f.ProbeSource, f.Quorum, f.Probers,
		r.Addrs, r.Password, r.DB, r.MasterName, r.TLS))
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
		m = &member{key: key, client: locate.NewRedisClient(&rc)}
		f, err := fleet.Start(fleet.Config{
			Name: o.Fleet.Name, Member: o.Fleet.Member,
			Vantage: fleet.Vantage{Carrier: o.Fleet.Carrier, Province: o.Fleet.Province},
			Client:  m.client, Timeout: fleet.DefaultTimeout,
			Quorum: o.Fleet.Quorum, Probers: o.Fleet.Probers,
			Seed:       seedOf(c.state(), o.Fleet.Member),
			OnState:    m.onState,
			OnConflict: onConflict,
		})
		if err != nil {
			members.Unlock()
			m.client.Close()
			return fmt.Errorf("%s:%d - Error during setup: fleet: %w", o.File, o.Fleet.Line, err)
		}
		m.f = f
		members.m[key] = m
		log.Infof("Fleet %s: member %s, vantage %s", o.Fleet.Name, o.Fleet.Member, fleet.Vantage{Carrier: o.Fleet.Carrier, Province: o.Fleet.Province})
	}
	m.refs++
	members.Unlock()
	m.ctl.Store(c)
	c.member = m
	c.adoptFleet(m.f.State())
	return nil
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
	if en, ok := s.Get(canaryKey); ok && json.Unmarshal(en.Value, &e) == nil && e.Identity == cn.Identity {
		if !e.RolledBack {
			cn.SetPercent(e.Percent) // clears a rollback: a member started a new experiment
		}
		return
	}
	if back, _ := cn.RolledBack(); back && c.rolledBack.Load() {
		return
	}
	if cn.Share() != canary.PercentToShare(cn.Opts.Percent) {
		cn.SetPercent(cn.Opts.Percent)
	}
}

// fromFleet is the admin state the fleet's entries say; entries that do not
// hold against this node table are left out, and logged.
func (c *Control) fromFleet(s *fleet.State) *admin.State {
	st := &admin.State{}
	for _, k := range s.Keys(drainPrefix) {
		e, _ := s.Get(k)
		var d admin.DrainEntry
		id := strings.TrimPrefix(k, drainPrefix)
		if err := json.Unmarshal(e.Value, &d); err != nil || d.Node != id {
			log.Warningf("Fleet: %s: not a drain, ignored", k)
			continue
		}
		if _, ok := c.table.Index(id); ok {
			st.Drains = append(st.Drains, d)
		}
	}
	seen := map[netip.Prefix]bool{}
	for _, k := range s.Keys(pinPrefix) {
		e, _ := s.Get(k)
		var y overrides.EntryYAML
		if err := json.Unmarshal(e.Value, &y); err != nil {
			log.Warningf("Fleet: %s: not a pin, ignored", k)
			continue
		}
		en, err := y.Entry(knownIn(c.table))
		if err == nil && slices.ContainsFunc(en.Prefixes, func(p netip.Prefix) bool { return seen[p] }) {
			err = fmt.Errorf("overlaps another pin")
		}
		if err != nil {
			log.Warningf("Fleet: %s: %v: ignored here", k, err)
			continue
		}
		for _, p := range en.Prefixes {
			seen[p] = true
		}
		st.Pins = append(st.Pins, y)
	}
	if e, ok := s.Get(canaryKey); ok {
		var ce admin.CanaryEntry
		if json.Unmarshal(e.Value, &ce) == nil {
			st.Canary = &ce
		}
	}
	return st
}

// sharedEntries is an admin state as the fleet's entries.
func sharedEntries(st *admin.State) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, d := range st.Drains {
		d.Since = yamlfile.Time{Time: d.Since.UTC().Round(0)}
		out[drainPrefix+d.Node], _ = json.Marshal(d)
	}
	for i := range st.Pins {
		out[pinPrefix+pinKey(&st.Pins[i])], _ = json.Marshal(st.Pins[i])
	}
	if st.Canary != nil {
		out[canaryKey], _ = json.Marshal(st.Canary)
	}
	return out
}

// seedOf is the state file as the fleet's last known state: older than any
// change the fleet made, so that it fills only what Redis lacks.
func seedOf(st *admin.State, member string) *fleet.State {
	s := &fleet.State{Entries: map[string]fleet.Entry{}}
	for k, v := range sharedEntries(st) {
		s.Entries[k] = fleet.Entry{Value: v, Origin: fleet.Origin{Member: member}}
	}
	return s
}

// shareState hands the fleet what a save changed. Callers hold c.mu.
func (c *Control) shareState(st *admin.State) {
	if c.member == nil {
		return
	}
	next := sharedEntries(st)
	var changes []fleet.Change
	for _, k := range slices.Sorted(maps.Keys(next)) {
		if prev, ok := c.shared[k]; !ok || string(prev) != string(next[k]) {
			changes = append(changes, fleet.Change{Key: k, Value: next[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.shared)) {
		if _, ok := next[k]; !ok {
			changes = append(changes, fleet.Change{Key: k})
		}
	}
	c.shared = next
	if len(changes) == 0 {
		return
	}
	if _, err := c.member.f.Set(changes...); err != nil {
		log.Errorf("Fleet: %v", err)
	}
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
