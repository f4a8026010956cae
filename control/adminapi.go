package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/runstate"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// adminMemory keeps, for the process, the state of admin blocks without a
// state file, by address: a Corefile reload keeps drains and pins.
var adminMemory sync.Map // address -> *admin.State

// restoreState applies the admin state: the state file's, or what an
// earlier load of the Corefile left for the same address. A state file
// that does not load never stops gslb: it serves without it, says so, and
// refuses changes (so that nothing overwrites the file) until the file is
// fixed or removed. Callers own c.
func (c *Control) restoreState() {
	a := c.opts.Admin
	if a == nil {
		return
	}
	st := &admin.State{}
	if a.State != "" {
		s, err := admin.LoadState(a.State, c.opts.MaxFileSize, c.known(c.table))
		if err != nil {
			if c.stateErr == nil || c.stateErr.Error() != err.Error() {
				log.Errorf("admin: %v: serving without it; the admin API refuses changes until the file is fixed or removed", err)
			}
			c.stateErr = err
			// What this process last saved, if it did: a reload keeps it.
			if m, ok := adminMemory.Load(a.Addr); ok {
				st = m.(*admin.State)
			}
		} else {
			if c.stateErr != nil {
				log.Infof("admin state %s loads again: the admin API takes changes", a.State)
			}
			c.stateErr = nil
			st = s
		}
	} else if m, ok := adminMemory.Load(a.Addr); ok {
		st = m.(*admin.State)
	}
	c.seedOrigins = st.Origins
	if c.member != nil { // the fleet's state, of which the file is a copy
		c.adoptFleet(c.member.f.State())
		return
	}
	c.adopt(st)
}

// storedSalt is the state file's canary_salt, read apart from its
// entries: they are read again, with their errors, when the state is
// restored, and a drain or pin that does not load does not lose the salt.
func storedSalt(o *config.Options) canary.StoredSalt {
	if o.Admin == nil || o.Admin.State == "" {
		return canary.StoredSalt{Readable: true}
	}
	salt, ok := admin.ReadSalt(o.Admin.State, o.MaxFileSize)
	return canary.StoredSalt{Salt: salt, Readable: ok}
}

// StateError is why the admin state file does not load; nil when it does
// (or there is none).
func (c *Control) StateError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateErr
}

// adopt makes st this instance's admin state. Callers own c.
func (c *Control) adopt(st *admin.State) {
	c.drains = st.DrainsInput()
	if err := c.setPins(st.Pins); err != nil {
		log.Errorf("admin: pins: %v", err)
	}
	c.plans.list = st.Plans
	// The API's share, or a rollback, holds while the canary line and the
	// candidate file are those it was made for.
	if cn, e := c.canary.Load(), st.Canary; cn != nil && e != nil && e.Identity == cn.Identity {
		if e.Autopilot != nil {
			cn.RestoreAutopilot(e)
			return
		}
		if e.RolledBack {
			cn.RollBack(e.Reason)
		} else {
			cn.Restore(e.Percent)
		}
	}
}

// follow applies the state a later load of the Corefile saved: this
// instance may answer queries until it stops.
func (c *Control) follow(st *admin.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopt(st)
	c.applyOverrides(time.Now())
	c.publish()
}

// writable reports whether the API may change the state: not while the
// state file does not load. It reads the file again first, so that a
// fixed or removed file is taken up. Callers hold c.mu.
func (c *Control) writable() error {
	if !c.started {
		return admin.ErrUnavailable
	}
	if c.stateErr == nil {
		return nil
	}
	c.restoreState()
	if c.stateErr != nil {
		return &admin.Refused{Reason: fmt.Sprintf("%v: changes are refused until the file is fixed or removed", c.stateErr)}
	}
	c.applyOverrides(time.Now())
	c.publish()
	return nil
}

// known reports whether a node is in the stable table t or in the
// canary's candidate: the API drains and pins both. Callers hold c.mu.
func (c *Control) known(t *table.Table) func(string) bool {
	cn := c.canary.Load()
	return func(id string) bool {
		if _, ok := t.Index(id); ok {
			return true
		}
		if cn != nil {
			_, ok := cn.Table.Index(id)
			return ok
		}
		return false
	}
}

// forgetRemoved drops the drains and pins of nodes a new table no longer
// has, so that the state never names a node the table lacks. Callers
// hold c.mu.
func (c *Control) forgetRemoved(t *table.Table) {
	known := c.known(t)
	changed := false
	for id := range c.drains {
		if !known(id) {
			if c.drains[id].Drained {
				log.Infof("admin: node %s left the node table: no longer drained", id)
			}
			c.drains = maps.Clone(c.drains)
			delete(c.drains, id)
			changed = true
		}
	}
	var pins []overrides.EntryYAML
	for _, p := range c.pins {
		p, gone, keep, _ := runstate.CheckPin(p, known)
		if len(gone) > 0 {
			changed = true
			log.Infof("admin: pin %s: nodes %v left the node table", runstate.PinKey(&p), gone)
		}
		if keep {
			pins = append(pins, p)
		}
	}
	if !changed {
		return
	}
	prev := c.table
	c.table = t // setPins validates against the new table
	if err := c.setPins(pins); err != nil {
		log.Errorf("admin: pins: %v", err)
	}
	c.table = prev
	c.saveLogged()
}

// noteRollback is called on the query path when the canary rolls back:
// the watcher saves the state.
func (c *Control) noteRollback() {
	c.rolledBack.Store(true)
	c.poke()
}

// setPins validates pins against the current table and installs them.
func (c *Control) setPins(pins []overrides.EntryYAML) error {
	entries := make([]overrides.Entry, 0, len(pins))
	lines := make([][]byte, 0, len(pins))
	seen := map[netip.Prefix]bool{}
	for i := range pins {
		e, err := pins[i].Entry(c.known(c.table))
		if err != nil {
			return fmt.Errorf("pin %s: %w", runstate.PinKey(&pins[i]), err)
		}
		for _, p := range e.Prefixes {
			if seen[p] {
				return fmt.Errorf("pin %s: %s is pinned twice", runstate.PinKey(&pins[i]), p)
			}
			seen[p] = true
		}
		line, err := admin.PinLine(&pins[i])
		if err != nil {
			return fmt.Errorf("pin %s: %w", runstate.PinKey(&pins[i]), err)
		}
		entries = append(entries, e)
		lines = append(lines, line)
	}
	c.installPins(pinSet{pins, entries, lines, nil})
	return nil
}

// pinSet is the pins with what a change needs of each, kept so that a
// change of one pin checks and encodes only that one: its entry, and its
// line in the state file.
type pinSet struct {
	pins    []overrides.EntryYAML
	entries []overrides.Entry
	lines   [][]byte
	table   *overrides.Table // nil: to build
}

func (c *Control) pinSet() pinSet { return pinSet{c.pins, c.pinEntries, c.pinLines, c.pinTable} }

func (c *Control) installPins(s pinSet) {
	if s.table == nil {
		s.table = overrides.New(s.entries)
	}
	c.pins, c.pinEntries, c.pinLines, c.pinTable = s.pins, s.entries, s.lines, s.table
}

// keepPins is the pins keep holds to, in new slices.
func (c *Control) keepPins(keep func(i int) bool) pinSet {
	n := len(c.pins) + 1 // room for a pin to add
	s := pinSet{pins: make([]overrides.EntryYAML, 0, n), entries: make([]overrides.Entry, 0, n), lines: make([][]byte, 0, n)}
	for i := range c.pins {
		if keep(i) {
			s.pins = append(s.pins, c.pins[i])
			s.entries = append(s.entries, c.pinEntries[i])
			s.lines = append(s.lines, c.pinLines[i])
		}
	}
	return s
}

// notFor is the pins but those for network p.
func (c *Control) notFor(p netip.Prefix) pinSet {
	return c.keepPins(func(i int) bool { return !slices.Contains(c.pinEntries[i].Prefixes, p) })
}

// prunePins drops the pins expired at now from the state.
func (c *Control) prunePins(now time.Time) {
	c.installPins(c.keepPins(func(i int) bool {
		p := &c.pins[i]
		if p.Expires == nil || p.Expires.After(now) {
			return true
		}
		log.Infof("admin: pin %s expired", runstate.PinKey(p))
		return false
	}))
	c.saveLogged()
}

// state is the admin state to save. Callers hold c.mu.
func (c *Control) state() *admin.State {
	st := &admin.State{State: runstate.State{Pins: c.pins, CanarySalt: c.salt.Stored, Plans: c.plans.list}, PinLines: c.pinLines}
	for _, id := range slices.Sorted(maps.Keys(c.drains)) {
		if d := c.drains[id]; d.Drained {
			st.Drains = append(st.Drains, admin.DrainEntry{Node: id, Since: yamlfile.Time{Time: d.Since}})
		}
	}
	if cn := c.canary.Load(); cn != nil {
		switch back, reason := cn.RolledBack(); {
		case back:
			st.Canary = &admin.CanaryEntry{Identity: cn.Identity, File: cn.Opts.File, RolledBack: true, Reason: reason}
		case cn.Share() != canary.PercentToShare(cn.Opts.Percent) || cn.AutopilotEntry() != nil:
			st.Canary = &admin.CanaryEntry{Identity: cn.Identity, File: cn.Opts.File, Percent: cn.Percent()}
		}
		if st.Canary != nil {
			st.Canary.Autopilot = cn.AutopilotEntry() // the autopilot's step and history, shared with the canary key
		}
	}
	return st
}

// saveState writes st to the state file, or keeps it in memory without
// one, then hands the fleet what changed, and the touched keys however
// little they changed: an acknowledged change gets its own origin, so
// that it wins over any earlier one the member had not seen. Never over a
// state file that does not load, never once a later load of the Corefile
// serves the API (admin.ErrSuperseded), and never a change the fleet
// cannot store. Callers hold c.mu.
func (c *Control) saveState(st *admin.State, touched ...string) error {
	a := c.opts.Admin
	if a == nil || !c.started {
		return nil
	}
	if c.stateErr != nil {
		return &admin.Refused{Reason: fmt.Sprintf("%v: changes are refused until the file is fixed or removed", c.stateErr)}
	}
	var changes []fleet.Change
	var next map[string]json.RawMessage
	if c.member != nil {
		next = sharedEntries(st)
		changes = c.member.f.Stamp(c.changes(next, touched))
		if len(changes) > 0 {
			if err := c.member.f.Fits(changes); err != nil {
				var tl *fleet.TooLarge
				if errors.As(err, &tl) {
					return &admin.TooLarge{Size: int64(tl.Size), Limit: int64(tl.Limit), Fleet: true, Key: tl.Key}
				}
				return err
			}
		}
		st.Origins = c.originsOf(next, changes)
	}
	write := func() error {
		if a.State != "" {
			if err := st.Write(a.State, c.opts.MaxFileSize); err != nil {
				err = fmt.Errorf("admin state %s: %w", a.State, err)
				if !errors.As(err, new(*admin.TooLarge)) {
					if ok, dropped := saveFailures.Allow(10 * time.Second); ok {
						log.Errorf("admin: the change is not made: %v%s", err, ratelog.Note(dropped))
					}
					return &loggedError{err}
				}
				return err
			}
		}
		adminMemory.Store(a.Addr, st)
		return nil
	}
	var err error
	if c.admin == nil {
		err = write()
	} else {
		err = c.admin.Save(st, write)
	}
	if err == nil && c.member != nil {
		c.shared = next
		if len(changes) > 0 {
			if _, err := c.member.f.Set(changes...); err != nil {
				log.Errorf("Fleet: %v", err)
			}
		}
	}
	return err
}

// saveFailures logs the state file's failed writes (a full disk, a
// removed directory) at most once per 10s, with the count it left out.
var saveFailures ratelog.Limit

// loggedError is an error saveFailures logged already.
type loggedError struct{ error }

func (e *loggedError) Unwrap() error { return e.error }

// saveLogged saves the state for a change the API did not ask for (an
// expiry, a node leaving the table, a rollback). Callers hold c.mu.
func (c *Control) saveLogged() {
	err := c.saveState(c.state())
	if err != nil && !errors.Is(err, admin.ErrSuperseded) && !errors.As(err, new(*admin.Refused)) && !errors.As(err, new(*loggedError)) {
		log.Errorf("admin: %v", err)
	}
}

// adminBackend is a gslb block's side of the admin API.
type adminBackend struct{ c *Control }

func (b *adminBackend) Nodes() []admin.Node {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return b.nodesLocked()
}

// nodesLocked is every node of the stable table, then those only the
// canary's candidate has, each with the tables that have it. Callers hold
// c.mu.
func (b *adminBackend) nodesLocked() []admin.Node {
	c := b.c
	v := c.view.Load()
	out := c.nodesOf(v, c.checker.Snapshot(), c.drains, "stable", nil)
	cn := c.canary.Load()
	if cn == nil {
		return out
	}
	cv := cn.View.Load()
	if cv == nil {
		return out
	}
	at := make(map[string]int, len(out))
	for i := range out {
		at[out[i].ID] = i
	}
	for _, n := range c.nodesOf(cv, cn.Checker.Snapshot(), c.drains, "canary", at) {
		if i, ok := at[n.ID]; ok {
			out[i].Tables = append(out[i].Tables, "canary")
			continue
		}
		out = append(out, n)
	}
	return out
}

// nodesOf is the nodes of v, in table tbl, but those skip has.
func (c *Control) nodesOf(v *policy.View, snap *health.Snapshot, drains map[string]policy.Drain, tbl string, skip map[string]int) []admin.Node {
	records := map[int][]string{}
	for _, name := range v.Table.Names {
		r := v.Table.Records[name]
		for _, i := range slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(r.V4), r.V6...)))) {
			records[i] = append(records[i], name)
		}
	}
	out := make([]admin.Node, 0, len(v.Table.Nodes))
	for i := range v.Table.Nodes {
		if _, ok := skip[v.Table.Nodes[i].ID]; ok {
			out = append(out, admin.Node{ID: v.Table.Nodes[i].ID})
			continue
		}
		n := nodeInfo(v, snap, drains, i, records[i])
		n.Tables = []string{tbl}
		n.Origin = c.origin(runstate.DrainPrefix + n.ID)
		out = append(out, n)
	}
	return out
}

// nodeInfo is node i as the API shows it: the probes' verdict, whether it
// is drained, and since when it is in its state (drained or probed).
func nodeInfo(v *policy.View, snap *health.Snapshot, drains map[string]policy.Drain, i int, records []string) admin.Node {
	id := v.Table.Nodes[i].ID
	n := admin.Node{ID: id, State: policy.StateUnprobed, Load: v.Nodes[i].Load, Records: records}
	if n.Records == nil {
		n.Records = []string{}
	}
	var since time.Time
	if st, ok := snap.Status(id); ok {
		n.State, n.Reason, since = st.State.String(), st.Reason, st.Since
	}
	if d := drains[id]; d.Drained {
		n.Drained, since = true, d.Since
	}
	if !since.IsZero() {
		n.Since = &since
	}
	return n
}

func (b *adminBackend) Drain(id string, drained bool, who string) (admin.Node, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return admin.Node{}, err
	}
	if !c.known(c.table)(id) {
		return admin.Node{}, fmt.Errorf("node %q: %w%s", id, admin.ErrNotFound, c.nodeHint(id))
	}
	cur, was := c.drains[id]
	same := was && cur.Drained == drained || !was && !drained
	if same && c.member == nil {
		return b.nodeLocked(id), nil // nothing to change
	}
	// In a fleet the change is shared even when this member holds it
	// already: an opposite one it has not seen yet must not win.
	err := c.change([]string{runstate.DrainPrefix + id}, func() (func(), error) {
		prev, next := c.drains, c.drains
		if !same {
			next = maps.Clone(c.drains)
			if next == nil {
				next = map[string]policy.Drain{}
			}
			next[id] = policy.Drain{Drained: drained, Since: time.Now()}
		}
		c.drains = next
		return func() { c.drains = prev }, nil
	})
	if err != nil {
		return admin.Node{}, err
	}
	verb := "undrained: its clients come back over the cooldown (" + c.opts.Cooldown.String() + ")"
	switch {
	case drained:
		verb = "drained"
	case c.opts.Cooldown <= 0:
		verb = "undrained: its clients come back at once (cooldown 0)"
	}
	log.Infof("admin: node %s %s (by %s)", id, verb, who)
	return b.nodeLocked(id), nil
}

// nodeLocked is node id as /v1/nodes shows it. Callers hold c.mu.
func (b *adminBackend) nodeLocked(id string) admin.Node {
	for _, n := range b.nodesLocked() {
		if n.ID == id {
			return n
		}
	}
	return admin.Node{ID: id}
}

func (b *adminBackend) Pins() []admin.Pin {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pinsOf(c.pins)
}

func (c *Control) pinsOf(pins []overrides.EntryYAML) []admin.Pin {
	out := make([]admin.Pin, 0, len(pins))
	for _, p := range pins {
		out = append(out, admin.Pin{EntryYAML: p, Origin: c.origin(runstate.PinPrefix + runstate.PinKey(&p))})
	}
	return out
}

func (b *adminBackend) AddPin(req admin.PinRequest, who string) ([]admin.Pin, error) {
	c := b.c
	p, err := overrides.ParsePrefix(req.CIDR)
	if err != nil {
		return nil, admin.Badf("cidr: %v", err)
	}
	y := overrides.EntryYAML{CIDR: p.String(), Nodes: req.Nodes, Location: req.Location, Note: req.Note}
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 {
			return nil, admin.Badf("ttl: %q is not a positive duration such as 2h", req.TTL)
		}
		y.Expires = &yamlfile.Time{Time: time.Now().Add(d).UTC()}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return nil, err
	}
	e, err := y.Entry(c.known(c.table))
	if err != nil {
		for _, id := range y.Nodes {
			if !c.known(c.table)(id) {
				return nil, admin.Badf("%v%s", err, c.nodeHint(id))
			}
		}
		return nil, admin.Badf("%v", err)
	}
	line, err := admin.CheckPin(&y)
	if err != nil {
		return nil, admin.Badf("%v", err)
	}
	if y.Location != nil {
		if err := checkISP(c.table, y.Location.ISP); err != nil {
			return nil, admin.Badf("location.isp: %v", err)
		}
	}
	// A pin of the same network replaces it.
	next := c.notFor(p)
	next.pins, next.entries, next.lines = append(next.pins, y), append(next.entries, e), append(next.lines, line)
	if err := c.change([]string{runstate.PinPrefix + y.CIDR}, c.pinsTo(next)); err != nil {
		return nil, err
	}
	what := "nodes " + strings.Join(y.Nodes, ",")
	if y.Location != nil {
		what = fmt.Sprintf("location %s/%s/%s", y.Location.Country, y.Location.Province, y.Location.ISP)
		if len(y.Nodes) > 0 {
			what += " and nodes " + strings.Join(y.Nodes, ",")
		}
	}
	until := ""
	if y.Expires != nil {
		until = " until " + y.Expires.Format(time.RFC3339)
	}
	log.Infof("admin: pinned %s to %s%s (by %s)", y.CIDR, what, until, who)
	return c.pinsOf(c.pins), nil
}

func (b *adminBackend) DeletePin(p netip.Prefix, who string) ([]admin.Pin, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return nil, err
	}
	next := c.notFor(p)
	if len(next.pins) == len(c.pins) {
		return nil, fmt.Errorf("pin %s: %w", p, admin.ErrNotFound)
	}
	if err := c.change([]string{runstate.PinPrefix + p.String()}, c.pinsTo(next)); err != nil {
		return nil, err
	}
	log.Infof("admin: unpinned %s (by %s)", p, who)
	return c.pinsOf(c.pins), nil
}

func (b *adminBackend) Explain(ctx context.Context, addr, name, qtype string) (any, error) {
	cl, err := decide.ParseClient(addr)
	if err != nil {
		return nil, admin.Badf("addr: %v", err)
	}
	t := dns.TypeA
	if qtype != "" {
		var ok bool
		if t, ok = dns.StringToType[strings.ToUpper(qtype)]; !ok || t != dns.TypeA && t != dns.TypeAAAA && t != dns.TypeHTTPS {
			return nil, admin.Badf("type: %q: gslb answers A, AAAA and HTTPS", qtype)
		}
	}
	x, err := b.c.decider.Explain(ctx, cl, name, t, nil)
	if err != nil {
		return nil, admin.Badf("%v", err)
	}
	return b.c.withCells(x), nil
}

func (b *adminBackend) Canary() (admin.Canary, error) {
	cn := b.c.canary.Load()
	if cn == nil {
		return admin.Canary{}, fmt.Errorf("no canary line in the gslb block: %w", admin.ErrNotFound)
	}
	return canaryState(cn), nil
}

func canaryState(cn *canary.Rollout) admin.Canary {
	cx, sx := cn.Ratios()
	s := admin.Canary{File: cn.Opts.File, Percent: cn.Percent(), Configured: cn.Opts.Percent,
		Decisions: cn.Decided(), Cross: cx, StableCross: sx}
	s.RolledBack, s.Reason = cn.RolledBack()
	if p := cn.Pilot(time.Now()); p != nil {
		s.Autopilot = p
	}
	return s
}

func (b *adminBackend) SetCanary(req admin.CanaryRequest, who string) (admin.Canary, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return admin.Canary{}, err
	}
	cn := c.canary.Load()
	if cn == nil {
		return admin.Canary{}, fmt.Errorf("no canary line in the gslb block: %w", admin.ErrNotFound)
	}
	err := c.change([]string{runstate.CanaryKey}, func() (func(), error) {
		undo := c.canaryUndo(cn)
		switch now := time.Now(); {
		case req.Autopilot == "resume":
			if !cn.Resume(who, now) {
				return nil, admin.Badf("autopilot: the canary block has no plan (steps, dwell, guard)")
			}
		case req.Autopilot == "pause":
			if cn.AutopilotEntry() == nil {
				return nil, admin.Badf("autopilot: the canary block has no plan (steps, dwell, guard)")
			}
			cn.Pause(who, now)
		default:
			cn.SetPercent(*req.Percent)
			cn.Pause(who, now) // a share set by hand holds until the autopilot resumes
		}
		return undo, nil
	})
	if err != nil {
		return admin.Canary{}, err
	}
	if p := cn.AutopilotEntry(); p != nil {
		log.Infof("admin: canary %s at %g%% of the subnets, autopilot %s (by %s)", cn.Opts.File, cn.Percent(), pausedWord(p.Paused), who)
	} else {
		log.Infof("admin: canary %s at %g%% of the subnets (by %s)", cn.Opts.File, cn.Percent(), who)
	}
	return canaryState(cn), nil
}

// change is the one path of a change of the runtime state, once the
// caller checked it: mutate makes it here (and returns its undo), then
// saveState checks both size limits, saves, and shares it with the fleet;
// only then is it published. A change that is not saved is undone: it was
// never acknowledged. Callers hold c.mu, with c writable.
func (c *Control) change(touched []string, mutate func() (undo func(), err error)) error {
	undo, err := mutate()
	if err != nil {
		return err
	}
	if err := c.saveState(c.state(), touched...); err != nil {
		undo()
		return err
	}
	c.applyOverrides(time.Now())
	c.publish()
	return nil
}

// pinsTo is the change to pins next, for change.
func (c *Control) pinsTo(next pinSet) func() (func(), error) {
	return func() (func(), error) {
		prev := c.pinSet()
		c.installPins(next)
		return func() { c.installPins(prev) }, nil
	}
}

// canaryUndo puts cn's share, and its autopilot's step and history, back
// as they are now.
func (c *Control) canaryUndo(cn *canary.Rollout) func() {
	share := cn.Share()
	back, _ := cn.RolledBack()
	pilot := cn.AutopilotEntry()
	return func() {
		cn.Revert(share, back)
		if pilot != nil {
			cn.RestoreAutopilot(&admin.CanaryEntry{Percent: canary.ShareToPercent(share), RolledBack: back, Autopilot: pilot})
		}
	}
}

// Apply makes changes of the runtime state as one: each is checked
// against the node table, and they are saved, shared with the fleet in one
// write and published in one view, or none is. No member serves a state
// holding part of them. Keys the fleet does not share are refused.
func (c *Control) Apply(who string, changes ...runstate.Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return err
	}
	return c.apply(who, changes...)
}

// apply is Apply. A drain a change removes ramps back over the cooldown,
// as an undrain does; a drain kept keeps its time; the canary's entry is
// adopted only when a change touches it (adopting it again would redo a
// rollback). Callers hold c.mu, with c writable.
func (c *Control) apply(who string, changes ...runstate.Change) error {
	touched := runstate.Touched(changes)
	for _, k := range touched {
		if !runstate.Shared(k) {
			return admin.Badf("%s: not a key of the state the API changes", k)
		}
	}
	cur := c.state()
	next, err := runstate.Apply(runstate.Encode(&cur.State, true), changes...)
	if err != nil {
		return admin.Badf("%v", err)
	}
	rs, skipped := runstate.Decode(next, c.known(c.table))
	for _, sk := range skipped {
		if slices.Contains(touched, sk.Key) {
			return admin.Badf("%s", sk)
		}
	}
	canaryTouched := slices.Contains(touched, runstate.CanaryKey)
	if !canaryTouched {
		rs.Canary = nil
	}
	now := time.Now()
	err = c.change(touched, func() (func(), error) {
		drains, pins, plans := c.drains, c.pinSet(), c.plans.list
		cu := func() {}
		if cn := c.canary.Load(); cn != nil {
			cu = c.canaryUndo(cn)
		}
		undo := func() { c.drains, c.plans.list = drains, plans; c.installPins(pins); cu() }
		c.adopt(&admin.State{State: *rs})
		if canaryTouched {
			c.adoptCanary(&fleet.State{Entries: map[string]fleet.Entry{runstate.CanaryKey: {Value: next[runstate.CanaryKey]}}})
		}
		for id, d := range drains {
			switch nd, kept := c.drains[id]; {
			case kept && d.Drained: // a drain kept keeps its time
				nd.Since = d.Since
				c.drains[id] = nd
			case !kept && !d.Drained: // a ramp under way
				c.drains[id] = d
			case !kept && slices.Contains(touched, runstate.DrainPrefix+id): // undrained now: its ramp
				c.drains[id] = policy.Drain{Since: now}
			}
		}
		return undo, nil
	})
	if err != nil {
		return err
	}
	log.Infof("admin: %d changes applied as one: %s (by %s)", len(changes), strings.Join(touched, ", "), who)
	return nil
}
