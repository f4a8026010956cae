// Package control is a gslb block's control plane: it loads and reloads
// the block's files, keeps the probes, the admin state and the fleet's
// shared state, and publishes the immutable views queries decide with.
package control

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/internal/yield"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/quality"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"
)

var log = clog.NewWithPlugin(config.Name)

// Control is one plugin instance's control plane: it builds the views that
// queries read from the node table, the probes' verdicts and the
// parameters, and keeps them current as files change and probes report.
// Its mutex guards only this background side; queries load the view.
type Control struct {
	view    atomic.Pointer[policy.View]
	locator *locate.Locator

	mu        sync.Mutex
	opts      *config.Options
	zones     []string
	table     *table.Table
	overrides *overrides.Table // the file's, expired entries included
	quality   *quality.Matrix  // the file's rows, stale ones included
	feed      *feed.Feed       // the edges' rows and cells; nil without a feed block
	resolvers *resolvers.Map   // the resolver map; nil without a resolvers block
	// mapStarted: the map took its stashed state at Start, and is
	// stashed for the next instance at Stop.
	mapStarted bool
	checker    *health.Checker
	decisions  *policy.Cache
	warmer     warmer // prepares decisions ahead for each view
	pace       pacer  // spaces and paces its warm-ups
	// probed batches the views of probe results; published counts the
	// views built.
	probed    batcher
	published atomic.Uint64
	decider   *decide.Decider
	// OnTable is told of every node table a reload swaps in, with the one
	// it replaces; set before the control starts.
	OnTable func(old, cur *table.Table)
	// fixed replaces every checker's verdicts when set: the tools' "every
	// node up", or one round of probes.
	fixed *health.Snapshot
	// fixedCells replaces the feed's cells when set: a tool's snapshot.
	fixedCells *feed.Cells

	// The candidate table in rollout; nil without a canary line. Queries
	// load it; the control plane replaces it when its file changes.
	canary atomic.Pointer[canary.Rollout]
	// What the admin API changed: drains by node id, and pins, which
	// take precedence over the overrides file.
	drains     map[string]policy.Drain
	pins       []overrides.EntryYAML
	pinEntries []overrides.Entry // checked, one per pin
	pinLines   [][]byte          // in the state file, one per pin
	pinTable   *overrides.Table
	plans      plans // the disaster-recovery plans and the decisions' sample
	admin      *admin.Handle
	// started: this instance serves and may write the admin state; the
	// tools' engines and instances being set up or stopped never do.
	started bool
	// serving: this instance started; it sets the gauges. Parsing, the
	// tools and an instance being set up never do.
	serving bool
	gauged  map[string]bool // the nodes with a node_drained series
	// salt keys the canary's choice of subnets, for the control's life.
	salt canary.Salt
	// stateErr: the state file does not load; no change is saved until
	// it does.
	stateErr error
	// rolledBack is set by a canary rolling back on the query path; the
	// watcher saves the state.
	rolledBack atomic.Bool
	// When something time-bound changes without a file or probe saying
	// so: an override expires, a quality row goes stale, a ramp steps.
	expiry, stale, rampStep time.Time
	wake                    chan struct{} // the next of them moved
	serial                  uint32
	files                   *watcher
	// member is the fleet this instance belongs to (nil: none), and
	// shared the admin state as the fleet last had it from here.
	member *member
	shared map[string]json.RawMessage
	// seedOrigins are the origins the state file kept: the fleet's
	// last known state starts from them.
	seedOrigins map[string]admin.KeyOrigin
	// sharedKey says what the fleet's verdicts were at the last publish.
	sharedKey string

	startOnce, stopOnce sync.Once
	stopCh              chan struct{}
	done                chan struct{}
}

// View is the stable table's view that queries decide with.
func (c *Control) View() *policy.View { return c.view.Load() }

// Canary is the candidate table in rollout; nil: none.
func (c *Control) Canary() *canary.Rollout { return c.canary.Load() }

// Locator places clients.
func (c *Control) Locator() *locate.Locator { return c.locator }

// Decider decides with what this control serves.
func (c *Control) Decider() *decide.Decider { return c.decider }

// Options are the block's options the control was loaded from.
func (c *Control) Options() *config.Options { return c.opts }

// Stopping is closed once Stop is called.
func (c *Control) Stopping() <-chan struct{} { return c.stopCh }

// Ready reports whether every probed node has its first probe result and,
// with the precomputation, its first table's view was warmed.
func (c *Control) Ready() bool { return c.Checker().Ready() && c.warmer.warmedOnce() }

// Checker is the stable table's checker.
func (c *Control) Checker() *health.Checker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checker
}

// Table is the stable node table.
func (c *Control) Table() *table.Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.table
}

// Probes are the probes of the stable and the candidate tables.
func (c *Control) Probes() []health.Target {
	probes := c.Table().Probes
	if cn := c.canary.Load(); cn != nil {
		probes = append(slices.Clone(probes), cn.Table.Probes...)
	}
	return probes
}

// Fix replaces every checker's verdicts with snap: a tool's "every node
// up", or one round of probes.
func (c *Control) Fix(snap *health.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixed = snap
	c.publish()
}

// SaltKept reports whether the canary's salt outlives this process, so
// that its subnets are the server's.
func (c *Control) SaltKept() bool { return c.salt.Kept() }

// New loads everything a query needs and starts no goroutine. Its
// errors name the Corefile line of the option whose file or settings
// failed.
func New(o *config.Options) (*Control, error) {
	c, option, err := loadControl(o)
	if err != nil && (option == "" || o.Lines[option] == 0) {
		return nil, err // it names its line, or its file came from a tool's flag
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d - Error during setup: %w", o.File, o.Lines[option], err)
	}
	return c, nil
}

func loadControl(o *config.Options) (c *Control, option string, err error) {
	zones := o.Zones
	if o.AdminTokenFile != "" {
		tok, err := admin.ReadTokenFile(o.AdminTokenFile)
		if err != nil {
			return nil, "", fmt.Errorf("%s:%d - Error during parsing: admin: token_file: %v", o.File, o.Lines[config.TokenFileLine], err)
		}
		a := *o.Admin
		a.Token = tok
		o.Admin = &a
	}
	t, err := loadTable("node table", o.Nodes, zones, o)
	if err != nil {
		return nil, "nodes", err
	}
	db, err := geo.OpenFiles(o.DB)
	if err != nil {
		return nil, dbOption(err), fmt.Errorf("%s: %w", dbOption(err), err)
	}
	ov, ovHash, err := loadOverrides(o.Overrides, o.MaxFileSize, t)
	if err != nil {
		return nil, "overrides", err
	}
	qm, qHash, err := loadQuality(o.Quality, o.MaxFileSize)
	if err != nil {
		return nil, "quality", err
	}
	lc := o.Config
	lc.DB, lc.DBFiles, lc.Carriers = db, o.DB, t.Carriers
	if len(o.CarrierLists) > 0 {
		lc.CarrierLists = &locate.CarrierListConfig{Paths: o.CarrierLists, MaxSize: o.MaxFileSize, Outvote: o.CarrierListsOutvote}
	}
	loc, err := locate.New(lc)
	if err != nil {
		option = "cache_size"
		if ce := (*locate.ConfigError)(nil); errors.As(err, &ce) && ce.Layer != "cache" {
			option = ce.Layer
		}
		return nil, option, err
	}
	salt := canary.ResolveSalt(o, storedSalt(o))
	var cn *canary.Rollout
	if o.Canary != nil {
		ct, err := loadTable("node table", o.Canary.File, zones, o)
		if err != nil {
			return nil, "canary", fmt.Errorf("canary: %w", err)
		}
		cn = canary.New(*o.Canary, ct, salt.Keys)
	}
	texts := map[string][32]byte{o.Nodes: t.Hash}
	if cn != nil {
		texts[o.Canary.File] = cn.Table.Hash
	}
	if o.Overrides != "" {
		texts[o.Overrides] = ovHash
	}
	if o.Quality != "" {
		texts[o.Quality] = qHash
	}
	c = &Control{
		locator:   loc,
		opts:      o,
		zones:     zones,
		table:     t,
		overrides: ov,
		quality:   qm,
		decisions: policy.NewCache(),
		salt:      salt,
		files:     newWatcher(texts, loc.Files(), o.MaxFileSize),
		stopCh:    make(chan struct{}),
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	if o.Precompute != nil && !o.Precompute.Off {
		c.warmer.signal = make(chan struct{}, 1)
	}
	warn(o, t)
	c.serial = c.nextSerial()
	c.checker = c.stableChecker(t)
	if cn != nil {
		cn.Checker = c.canaryChecker(cn)
		cn.OnRollback = c.noteRollback
		cn.Shared = o.Fleet != nil
		c.canary.Store(cn)
	}
	if err := c.loadFeed(); err != nil {
		return nil, "", err
	}
	if err := c.loadResolvers(); err != nil {
		return nil, "", err
	}
	c.decider = decide.New(c, decide.OptionsOf(o))
	c.restoreState()
	c.applyOverrides(time.Now())
	c.publish()
	return c, "", nil
}

// dbOption is the Corefile option of the database that failed.
func dbOption(err error) string {
	if fe := (*geo.FileError)(nil); errors.As(err, &fe) {
		return geo.FormatOf(fe.Kind).Option
	}
	if ce := (*locate.ConfigError)(nil); errors.As(err, &ce) {
		return ce.Layer
	}
	return geo.Formats[0].Option
}

// loadOverrides reads the overrides file ("" for none), checking its pins
// against t's nodes.
func loadOverrides(path string, limit int64, t *table.Table) (*overrides.Table, [32]byte, error) {
	if path == "" {
		return nil, [32]byte{}, nil
	}
	data, err := readFile("overrides", path, limit)
	if err != nil {
		return nil, [32]byte{}, err
	}
	ov, err := parseOverrides(path, data, t)
	return ov, sha256.Sum256(data), err
}

// parseOverrides parses an overrides file against t's nodes and carriers.
func parseOverrides(path string, data []byte, t *table.Table) (*overrides.Table, error) {
	ov, err := overrides.Parse(path, data, knownIn(t))
	if err != nil {
		return nil, err
	}
	for i, e := range ov.Entries {
		if e.Location == nil {
			continue
		}
		if err := checkISP(t, e.Location.ISP); err != nil {
			return nil, fmt.Errorf("overrides %s: line %d: overrides[%d]: field location.isp: %w", path, e.Line, i, err)
		}
	}
	return ov, nil
}

// checkISP refuses a carrier word that neither the built-in table nor t's
// carriers: knows: it would place clients on a carrier no node has.
func checkISP(t *table.Table, isp string) error {
	return t.Carriers.CheckCarrier(isp, t.Carriers.Carrier(0, isp))
}

// loadQuality reads the quality file ("" for none).
func loadQuality(path string, limit int64) (*quality.Matrix, [32]byte, error) {
	if path == "" {
		return nil, [32]byte{}, nil
	}
	data, err := readFile("quality", path, limit)
	if err != nil {
		return nil, [32]byte{}, err
	}
	m, err := quality.Parse(path, data)
	return m, sha256.Sum256(data), err
}

// loadTable reads a node table (the stable one or a canary's candidate).
func loadTable(kind, path string, zones []string, o *config.Options) (*table.Table, error) {
	data, err := readFile(kind, path, o.MaxFileSize)
	if err != nil {
		return nil, err
	}
	return table.Parse(path, data, zones, o.TTL)
}

func knownIn(t *table.Table) func(string) bool {
	return func(id string) bool { _, ok := t.Index(id); return ok }
}

// newChecker returns a checker of t's probes on the process's probe pool,
// which keeps the verdicts of unchanged probes across node table and
// Corefile reloads, and shares them between the stable and the candidate
// tables by node id and spec. Its reports publish while current(ch) says
// the checker still serves: a node's change of state at once, its load
// batched (batch.go).
func (c *Control) newChecker(t *table.Table, current func(ch *health.Checker) bool) *health.Checker {
	var ch *health.Checker
	var prev *health.Snapshot // the last report's; reports come one at a time
	ch = c.pool().NewChecker(t.Probes, func(s *health.Snapshot) {
		urgent := transition(t.Probes, prev, s)
		prev = s
		c.mu.Lock()
		serves := current(ch)
		c.mu.Unlock()
		if serves {
			c.probed.report(urgent, c.publishProbed)
		}
	})
	prev = ch.Snapshot()
	ch.Unprobed(unprobed(t))
	return ch
}

// publishProbed publishes the probes' latest verdicts, batched.
func (c *Control) publishProbed() {
	recovery.Do("publish", func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.stopping() {
			c.publish()
		}
	})
}

// unprobed are t's nodes without a probe, with their table load.
func unprobed(t *table.Table) map[string]float64 {
	loads := make(map[string]float64, len(t.Nodes)-len(t.Probes))
	for _, n := range t.Nodes {
		if !slices.ContainsFunc(t.Probes, func(p health.Target) bool { return p.ID == n.ID }) {
			loads[n.ID] = n.Load
		}
	}
	return loads
}

// stableChecker is the stable table's checker.
func (c *Control) stableChecker(t *table.Table) *health.Checker {
	return c.newChecker(t, func(ch *health.Checker) bool { return c.checker == ch })
}

// canaryChecker is the candidate table's checker.
func (c *Control) canaryChecker(cn *canary.Rollout) *health.Checker {
	return c.newChecker(cn.Table, func(ch *health.Checker) bool {
		cur := c.canary.Load()
		return cur != nil && cur.Checker == ch
	})
}

// inputs is what a view of table t is built from: t's verdicts in snap
// (and the fleet's), the quality links, the admin state's drains and
// the block's parameters; the same for the stable table and the canary's
// candidate. key says what the fleet's verdicts were. Callers hold c.mu.
func (c *Control) inputs(t *table.Table, snap *health.Snapshot, links *scoring.Links, cache *policy.Cache, now time.Time) (policy.Inputs, string) {
	sh, key := c.sharedVerdicts(t)
	return policy.Inputs{Table: t, Snapshot: snap, Params: &c.opts.Params, Links: links, Serial: c.serial, Now: now,
		Cooldown: c.opts.Cooldown, Cache: cache, Drains: c.drains, Shared: policyShared(sh)}, key
}

// publish builds and stores the view of the current table with snap's
// verdicts, the fresh quality rows and the cooldown ramps. Callers hold
// c.mu, or own c alone.
func (c *Control) publish() {
	now := time.Now()
	links, fresh, stale, next := c.quality.Links(c.table.Index, now, c.opts.QualityMaxAge)
	links, ramp := c.feedLinks(links, now)
	if !ramp.IsZero() && (next.IsZero() || ramp.Before(next)) {
		next = ramp
	}
	snap := c.fixed
	if snap == nil {
		snap = c.checker.Snapshot()
		c.reportFleet(snap)
	}
	in, key := c.inputs(c.table, snap, links, c.decisions, now)
	c.sharedKey = key
	v, step := policy.NewView(in)
	c.view.Store(v)
	c.published.Add(1)
	c.probed.published()
	if cstep := c.publishCanary(now); !cstep.IsZero() && (step.IsZero() || cstep.Before(step)) {
		step = cstep
	}
	c.warmer.poke() // both views
	if c.serving {
		c.recordGauges(fresh, stale)
	}
	before := c.nextEvent()
	c.stale, c.rampStep = next, step
	if c.nextEvent() != before {
		c.poke()
	}
}

// recordGauges sets the gauges to what this instance serves: the quality
// rows, the drained nodes, whether the admin state loads, the canary's
// rollback. Callers hold c.mu.
func (c *Control) recordGauges(fresh, stale int) {
	if c.quality != nil {
		qualityRows.WithLabelValues("fresh").Set(float64(fresh))
		qualityRows.WithLabelValues("stale").Set(float64(stale))
	}
	for id := range c.gauged {
		if _, ok := c.drains[id]; !ok {
			nodeDrained.DeleteLabelValues(id)
			delete(c.gauged, id)
		}
	}
	for id, d := range c.drains {
		if c.gauged == nil {
			c.gauged = map[string]bool{}
		}
		c.gauged[id] = true
		v := 0.0
		if d.Drained {
			v = 1
		}
		nodeDrained.WithLabelValues(id).Set(v)
	}
	if a := c.opts.Admin; a != nil && a.State != "" {
		v := 0.0
		if c.stateErr == nil {
			v = 1
		}
		adminStateOK.WithLabelValues(a.State).Set(v)
	}
	if cn := c.canary.Load(); cn != nil {
		cn.Record()
	}
}

// nextEvent is the first of the time-bound changes; zero: none.
func (c *Control) nextEvent() time.Time {
	var first time.Time
	for _, t := range []time.Time{c.expiry, c.stale, c.rampStep} {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// applyOverrides hands the locator the overrides in force at now and notes
// when the next one expires. Callers hold c.mu, or own c alone.
func (c *Control) applyOverrides(now time.Time) {
	pins, nextPin := c.pinTable.Active(now)
	if pins.Len() < c.pinTable.Len() {
		c.prunePins(now)
	}
	active, next := c.overrides.Active(now)
	c.locator.SetOverrides(pins, active)
	if !nextPin.IsZero() && (next.IsZero() || nextPin.Before(next)) {
		next = nextPin
	}
	if next != c.expiry {
		c.expiry = next
		c.poke()
	}
}

// poke wakes the watcher to recompute its next event.
func (c *Control) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Control) Start() error {
	var err error
	c.startOnce.Do(func() {
		// The fleet's state first: the first answer has it.
		c.mu.Lock()
		err = c.joinFleet()
		readStream := c.shareFeed()
		readResolvers := c.shareResolvers()
		c.mu.Unlock()
		if c.resolvers != nil {
			c.resolvers.Adopt(context.Background(), c.resolversID())
			c.mapStarted = true
		}
		if readStream != nil {
			go readStream()
		}
		if readResolvers != nil {
			go readResolvers()
		}
		if c.warmer.signal != nil {
			c.locator.SetOnTable(c.warmer.poke)
			c.warmer.wg.Add(1)
			go c.warm(c.stopCh)
		}
		c.locator.Start()
		// Checkers start outside c.mu: a probe that reports meanwhile
		// holds the checker's notify lock and waits for c.mu.
		c.mu.Lock()
		ch, cn := c.checker, c.canary.Load()
		c.mu.Unlock()
		ch.Start()
		if cn != nil {
			cn.Checker.Start()
		}
		c.mu.Lock()
		c.serving = true
		recordDBInfo(c.locator.DB())
		c.publish()
		c.files.serve()
		log.Info(c.loadedLine())
		c.mu.Unlock()
		releaseMemory()
		go c.watch()
	})
	if err != nil {
		return err
	}
	if c.opts.Admin == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin != nil {
		return nil
	}
	h, err := admin.Acquire(*c.opts.Admin, &adminBackend{c: c})
	if err != nil {
		return err
	}
	c.admin = h
	h.Follow(c.follow)
	// The previous instance served the API until now: take what it
	// changed since this one was set up. Its saves from now on are
	// refused and made here.
	c.restoreState()
	c.started = true
	if c.member != nil {
		c.saveLogged() // the fleet's state, as the last known copy
	}
	c.keepSalt()
	if cn := c.canary.Load(); cn != nil && cn.AutopilotEntry() != nil {
		c.saveLogged() // the step's start: a restart resumes its dwell
	}
	c.applyOverrides(time.Now())
	c.publish()
	return nil
}

// Reclaim points the admin API back at this instance after a Corefile
// reload failed: the new instance that took it over never runs.
func (c *Control) Reclaim() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.member != nil {
		c.member.ctl.Store(c) // the failed load's instance applied the fleet's state
	}
	if c.feed != nil {
		c.feed.Retune() // the failed load's feed block retuned the shared fold
	}
	if c.admin != nil {
		c.admin.Reclaim()
		c.restoreState() // what the failed load saved meanwhile
		c.applyOverrides(time.Now())
		c.publish()
	}
	return nil
}

func (c *Control) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.started = false // no more state saves: the next instance owns the state
		c.mu.Unlock()
		close(c.stopCh)
		c.startOnce.Do(func() { close(c.done) }) // never started: nothing to wait for
		<-c.done
		if c.mapStarted {
			c.resolvers.Stash(c.resolversID()) // the watch loop that folds it is done
		}
		c.warmer.wg.Wait()
		c.probed.stop()
		c.files.unserve() // the watch loop is done with it
		c.mu.Lock()
		ch, h := c.checker, c.admin
		c.admin = nil
		c.mu.Unlock()
		if h != nil {
			h.Release()
		}
		ch.Stop()
		if cn := c.canary.Load(); cn != nil {
			cn.Checker.Stop()
		}
		c.leaveFleet()
		c.locator.Close()
		if c.feed != nil {
			c.feed.Close()
		}
	})
	return nil
}

// watch reloads the files when they change, and rebuilds the view when an
// override expires, a quality row goes stale or a cooldown ramp steps.
func (c *Control) watch() {
	defer close(c.done)
	var tick <-chan time.Time
	if c.opts.Reload > 0 {
		t := time.NewTicker(c.opts.Reload)
		defer t.Stop()
		tick = t.C
	}
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	foldTick, stopFold := c.feedTick()
	defer stopFold()
	resTick, stopRes := c.resolversTick()
	defer stopRes()
	for {
		c.mu.Lock()
		next := c.nextEvent()
		c.mu.Unlock()
		expiry.Reset(untilOrHour(next))
		select {
		case <-c.stopCh:
			return
		case <-c.wake:
			if c.rolledBack.Swap(false) {
				c.mu.Lock()
				c.saveLogged()
				c.mu.Unlock()
			}
		case <-tick:
			recovery.Do("reload", c.Reload)
		case now := <-foldTick:
			recovery.Do("feed", func() { c.fold(now) })
		case <-resTick:
			recovery.Do("resolvers", func() { c.resolvers.Cycle(context.Background()) })
		case now := <-expiry.C:
			recovery.Do("reload", func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.applyOverrides(now)
				c.publish()
			})
		}
	}
}

// untilOrHour is the wait for the next expiry, at most an hour.
func untilOrHour(t time.Time) time.Duration {
	if t.IsZero() {
		return time.Hour
	}
	return min(max(time.Until(t), 0), time.Hour)
}

// Reload loads the files that changed and settled, outside the lock, and
// swaps them in. A bad file is rejected and the previous one keeps serving.
func (c *Control) Reload() {
	y := yield.New() // see package yield
	t, _ := reloadText(c.files, c.opts.Nodes, func(data []byte) (*table.Table, error) {
		return table.Parse(c.opts.Nodes, data, c.zones, c.opts.TTL)
	})
	y.Point()
	var ov *overrides.Table
	if c.opts.Overrides != "" && !c.stopping() {
		ov, _ = reloadText(c.files, c.opts.Overrides, func(data []byte) (*overrides.Table, error) {
			cur := t
			if cur == nil {
				c.mu.Lock()
				cur = c.table
				c.mu.Unlock()
			}
			return parseOverrides(c.opts.Overrides, data, cur)
		})
	}
	var qm *quality.Matrix
	if c.opts.Quality != "" && !c.stopping() {
		qm, _ = reloadText(c.files, c.opts.Quality, func(data []byte) (*quality.Matrix, error) {
			return quality.Parse(c.opts.Quality, data)
		})
	}
	var cn *canary.Rollout
	if o := c.opts.Canary; o != nil && !c.stopping() {
		cn, _ = reloadText(c.files, o.File, func(data []byte) (*canary.Rollout, error) {
			ct, err := table.Parse(o.File, data, c.zones, c.opts.TTL)
			if err != nil {
				return nil, fmt.Errorf("canary: %w", err)
			}
			return canary.New(*o, ct, c.salt.Keys), nil
		})
	}
	// The chain's sources with files of their own read them again; a
	// source that fails keeps serving what it had.
	var db *geo.DB
	reopened := c.files.dbsChanged()
	if len(reopened) > 0 {
		if err := c.locator.Reopen(); err != nil {
			if ce := (*locate.ConfigError)(nil); !errors.As(err, &ce) {
				err = fmt.Errorf("%s: %w", dbOption(err), err) // a ConfigError names its option
			}
			c.files.dbsFailed(reopened, dbOption(err), err)
		} else {
			db = c.locator.DB()
			recordDBInfo(db)
			c.files.watchDBs(c.locator.Files())
			c.files.dbsLoaded()
		}
	}
	if t == nil && ov == nil && qm == nil && db == nil && cn == nil {
		return
	}
	y.Point()
	var changed []string
	if cn != nil {
		old := c.swapCanary(cn)
		cn.Checker.Start()
		old.Checker.Stop()
		changed = append(changed, describeCanary(cn))
	}
	old, fresh, parts := c.swap(t, ov, qm, db)
	if db != nil {
		parts = append(parts, describeDB(db, reopened))
	}
	log.Info(c.reloadedLine(append(parts, changed...)))
	if fresh != nil {
		fresh.Start()
	}
	if old != nil {
		old.Stop()
	}
	if db != nil {
		releaseMemory() // the old databases' memo and the new ones' build
	}
	reloads.WithLabelValues("ok").Inc()
}

// stopping reports whether stop was called: a reload pass then parses no
// further file, so that shutdown waits for one parse at most.
func (c *Control) stopping() bool {
	select {
	case <-c.stopCh:
		return true
	default:
		return false
	}
}

// swapCanary puts a new candidate table in rollout, and returns the one it
// replaced, for the caller to stop outside the lock.
func (c *Control) swapCanary(cn *canary.Rollout) *canary.Rollout {
	c.mu.Lock()
	defer c.mu.Unlock()
	cn.Checker = c.canaryChecker(cn)
	cn.OnRollback = c.noteRollback
	cn.Shared = c.opts.Fleet != nil
	old := c.canary.Swap(cn)
	c.forgetRemoved(c.table) // nodes only the previous candidate had
	c.saveLogged()           // the previous canary's share or rollback no longer holds
	return old
}

// swap publishes a new table, overrides and databases (nil: unchanged; the
// locator reads new databases already) and
// returns the checker it replaced, for the caller to stop outside the lock,
// and what changed, for the log.
func (c *Control) swap(t *table.Table, ov *overrides.Table, qm *quality.Matrix, db *geo.DB) (old, fresh *health.Checker, changed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != nil {
		change := t.Diff(c.table)
		// A node without a probe exports its table load: a new checker
		// exports the new ones (the pool keeps the probes and verdicts).
		if change&table.ChangeProbes != 0 || change&table.ChangeNodes != 0 && !maps.Equal(unprobed(t), unprobed(c.table)) {
			old = c.checker
			c.checker = c.stableChecker(t)
			fresh = c.checker
		}
		c.forgetRemoved(t)
		if change&table.ChangeCarriers != 0 {
			c.locator.SetCarriers(t.Carriers)
		}
		if c.OnTable != nil {
			c.OnTable(c.table, t)
		}
		c.table = t
		if c.feed != nil {
			c.feed.SetTable(t)
		}
		if c.resolvers != nil {
			c.resolvers.SetDetection(detection(t))
		}
		changed = append(changed, describeTable("node table", t, change.String()))
	}
	if ov != nil {
		c.overrides = ov
		c.applyOverrides(time.Now())
		changed = append(changed, describeOverrides(c.opts.Overrides, ov))
	}
	if qm != nil {
		c.quality = qm
		changed = append(changed, describeQuality(c.opts.Quality, qm))
	}
	c.serial = c.nextSerial()
	c.publish()
	return old, fresh, changed
}
