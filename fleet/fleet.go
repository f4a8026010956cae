// Package fleet lets several gslb instances (the name servers of one zone,
// often in several carriers' data centres) act as one through a shared
// Redis, Redis Cluster or Sentinel: one control state, per-vantage probe
// verdicts, probe leases, fleet-wide canary counters and membership.
//
// Nothing here is for the query path: background loops read and write
// Redis, every call bounded by Config.Timeout, and push results into
// immutable snapshots (State, Verdicts) and callbacks.
//
// Redis layout; every key carries the fleet name as a hash tag, so that a
// Redis Cluster keeps one fleet in one slot and its scripts stay atomic:
//
//	gslb:fleet:{NAME}:state             hash: stamp, version (of the last write of the control state)
//	gslb:fleet:{NAME}:entries           hash: key (drain/ID, pin/CIDR, canary, ...) -> its Entry as JSON
//	gslb:fleet:{NAME}:entries:ver       hash: key -> the version that wrote it
//	gslb:fleet:{NAME}:changes           channel: the stamp after every accepted change, "rollback" after one
//	gslb:fleet:{NAME}:members           sorted set: member -> last heartbeat (Redis time, ms)
//	gslb:fleet:{NAME}:verdicts          hash: member -> its Report as JSON
//	gslb:fleet:{NAME}:verdicts:at       hash: member -> when it was written (Redis time, ms)
//	gslb:fleet:{NAME}:lease:VANTAGE:NODE:SLOT  string: the member holding a probe lease, PX 1.5 intervals
//	                                    (VANTAGE is carrier or carrier/province; SLOT 0..probers-1)
//	gslb:fleet:{NAME}:canary:ID:WINDOW  hash: cs, cx, ss, sx (canary/stable same/cross-province)
//	gslb:fleet:{NAME}:canary:ID:rollback  string: the Rollback as JSON, SET NX
//
// The stamp ("VERSION:MEMBER:NANOS") identifies one write; a change is
// written by compare-and-set on it, all its keys in one script, and a
// member reads only the entries written since the version it knows.
// Entries merge per key, last writer wins (origin time, then member id),
// so a change made while Redis was unreachable is written when it
// returns, and a Redis that lost its data is written back by the members
// that kept theirs. Origin times come from a hybrid logical clock on
// Redis's TIME (see clock.go), not from the member's wall clock. An entry
// that does not read (malformed, too large, a key of the wrong type) is
// logged, counted and skipped, and deleted or written back: never fatal
// to sharing.
//
// Timing, with I the probe interval: heartbeats, reports and lease renewals
// every I/2; a member counts for 3I after its heartbeat, a report for 3I
// after it was written (then it is only held, for a vantage with no fresh
// report, and deleted after 10I); a lease lives 1.5I; canary windows
// expire after 3 windows, rollbacks and deletions are kept 30 days (deletions on Redis's clock). Every
// time in Redis is Redis's (TIME): no member's clock times a heartbeat, a
// report or a lease.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"

	"github.com/redis/go-redis/v9"
)

var log = clog.NewWithPlugin("gslb")

// Defaults of Config.
const (
	DefaultTimeout       = time.Second
	DefaultProbeInterval = 5 * time.Second
	DefaultSyncInterval  = 500 * time.Millisecond
	DefaultQuorum        = 0.5

	// MaxStateBytes bounds the control state read from Redis, and
	// MaxReportBytes one member's verdicts.
	MaxStateBytes  = 8 << 20
	MaxReportBytes = 1 << 20
	// DefaultMaxEntryBytes bounds one entry of the control state: one
	// large entry leaves room for the others.
	DefaultMaxEntryBytes = 5 << 20
)

// Config is one member of a fleet.
type Config struct {
	Name    string                // the fleet; members with the same name share state
	Member  string                // this member's id, unique in the fleet
	Vantage Vantage               // where this member's probes see from
	Client  redis.UniversalClient // owned by the caller; Close does not close it

	Timeout       time.Duration // bound of every Redis call; 0: DefaultTimeout
	ProbeInterval time.Duration // verdicts older than 3 of these are ignored; 0: DefaultProbeInterval
	SyncInterval  time.Duration // re-read of the state besides the channel; 0: DefaultSyncInterval
	Quorum        float64       // down when at least this share sees a node down; 0: DefaultQuorum
	Probers       int           // members per vantage probing a node; 0: all
	MaxEntryBytes int           // bound of one entry of the state; 0: DefaultMaxEntryBytes

	// Seed is the last known state (the state file), used when Redis is
	// unreachable at start and merged into Redis's otherwise.
	Seed *State

	// Callbacks, called from the fleet's goroutines one at a time; they
	// may call the Fleet's methods, and should return quickly.
	OnState    func(*State)     // the state changed, other than by the caller's Set or in Start
	OnConflict func(Conflict)   // a change lost to a concurrent one, seen by the member that merged them
	OnLost     func(Conflict)   // this member's accepted change lost to one made without seeing it, learnt later
	OnVerdicts func(*Verdicts)  // new combined verdicts
	OnRollback func(Rollback)   // a canary rollback was decided, by any member
	Now        func() time.Time // the member's wall clock; nil: time.Now
}

// Origins of a change, for Stats.Changes.
const (
	OriginLocal  = "local"
	OriginRemote = "remote"
)

// Results of a change, for Stats.Changes.
const (
	ResultApplied = "applied" // accepted by the fleet (local) or applied here (remote)
	ResultPending = "pending" // local, kept while Redis is unreachable
	ResultLost    = "lost"    // lost a conflict
)

// ChangeKey labels a count of Stats.Changes.
type ChangeKey struct{ Origin, Result string }

// Stats are the fleet's values for metrics.
type Stats struct {
	Members   int                  // members with a fresh heartbeat, this one included; 1 while isolated
	SyncAge   time.Duration        // since the last successful read of the state
	Isolated  bool                 // SyncAge is past the verdicts' freshness: answering from own probes
	Changes   map[ChangeKey]uint64 // counts since Start
	Pending   int                  // local changes not yet in Redis
	LastError string               // of the last failed Redis call, "" after a success
	Repaired  map[string]uint64    // fleet keys' entries repaired since Start, by Repaired* kind
	Skipped   uint64               // entries of the shared state that did not read or were not shared, since Start
	Clock     ClockStats
}

// Fleet is one running member.
type Fleet struct {
	cfg  Config
	keys keys
	now  func() time.Time

	state    atomic.Pointer[State]
	verdicts atomic.Pointer[Verdicts]
	leases   atomic.Pointer[leaseView]

	mu         sync.Mutex // guards the fields below, and state's writes
	pending    map[string]pending
	synced     time.Time
	members    int
	changes    map[ChangeKey]uint64
	lastErr    string
	own        *Report
	reported   time.Time
	fresh      bool // own is not yet published
	reports    []heldReport
	nodes      []string
	watch      string          // canary identity whose rollback is watched
	seen       map[string]bool // rollbacks reported through OnRollback
	remote     *remote         // the shared state as last read or written
	skips      uint64
	skipLogged map[string]time.Time
	clk        clock
	fixed      map[string]uint64 // Stats.Repaired

	combining sync.Mutex // one combine at a time, stored in order
	cb        sync.Mutex // one callback at a time
	kick      chan struct{}
	done      chan struct{}
	base      context.Context // cancelled by Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	ps        *redis.PubSub
	started   time.Time
	running   atomic.Bool // loops started: OnState is called
	isolated  atomic.Bool // warned that Redis is unreachable
	closed    atomic.Bool
	repairLog ratelog.Limit
}

type keys struct {
	state, entries, vers, changes, members, verdicts, verdictsAt, prefix string
}

func newKeys(name string) keys {
	p := "gslb:fleet:{" + name + "}:"
	return keys{
		state: p + "state", entries: p + "entries", vers: p + "entries:ver", changes: p + "changes", members: p + "members",
		verdicts: p + "verdicts", verdictsAt: p + "verdicts:at", prefix: p,
	}
}

// Start validates cfg, reads the shared state (at most Timeout), and starts
// the background loops. When Redis cannot be read the member starts from
// cfg.Seed and writes it when Redis returns.
func Start(cfg Config) (*Fleet, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	f := &Fleet{
		cfg: cfg, keys: newKeys(cfg.Name), now: cfg.Now,
		pending: map[string]pending{}, changes: map[ChangeKey]uint64{}, seen: map[string]bool{}, skipLogged: map[string]time.Time{}, fixed: map[string]uint64{},
		kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
	f.started = f.now()
	f.base, f.cancel = context.WithCancel(context.Background())
	seed := &State{Entries: map[string]Entry{}}
	if cfg.Seed != nil {
		seed = cfg.Seed.clone()
	}
	f.state.Store(seed)
	f.verdicts.Store(&Verdicts{})
	f.leases.Store(&leaseView{})
	if !recovery.Do("fleet", f.syncState) || f.Stats().LastError != "" {
		log.Warningf("Fleet %s: cannot read the shared state, starting from the local copy (%d entries): %s",
			cfg.Name, len(seed.Entries), f.Stats().LastError)
	}
	f.ps = cfg.Client.Subscribe(context.Background(), f.keys.changes)
	f.running.Store(true)
	f.wg.Add(3)
	go f.listen()
	go f.loop("fleet state", f.cfg.SyncInterval, f.syncState, f.kick)
	go f.loop("fleet verdicts", f.tick(), f.round, nil)
	return f, nil
}

func (c *Config) defaults() error {
	switch {
	case c.Client == nil:
		return errors.New("fleet: no Redis client")
	case c.Name == "" || strings.ContainsAny(c.Name, "{}"):
		return fmt.Errorf("fleet: bad name %q", c.Name)
	case c.Member == "":
		return errors.New("fleet: no member id")
	case c.Vantage.Carrier == "":
		return errors.New("fleet: no vantage carrier")
	case c.Quorum < 0 || c.Quorum > 1:
		return fmt.Errorf("fleet: quorum %v is not a share between 0 and 1", c.Quorum)
	case c.Probers < 0:
		return fmt.Errorf("fleet: probers %d is negative", c.Probers)
	}
	c.Vantage.Carrier = strings.ToLower(strings.TrimSpace(c.Vantage.Carrier))
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.Quorum == 0 {
		c.Quorum = DefaultQuorum
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxEntryBytes <= 0 {
		c.MaxEntryBytes = DefaultMaxEntryBytes
	}
	return nil
}

// tick is the period of heartbeats, verdicts and leases: half a probe
// interval, so a lease of 1.5 intervals is taken over within two.
func (f *Fleet) tick() time.Duration { return f.cfg.ProbeInterval / 2 }

// freshness is how long a verdict counts.
func (f *Fleet) freshness() time.Duration { return 3 * f.cfg.ProbeInterval }

// Close stops the loops and leaves the fleet: its heartbeat, verdicts and
// leases are removed, so others take over at once. It waits for a round in
// flight and the leaving, each at most Timeout.
func (f *Fleet) Close() error { return f.stop(true) }

// stop ends the loops; without leave it is a crash, for tests.
func (f *Fleet) stop(leave bool) error {
	if f.closed.Swap(true) {
		return nil
	}
	close(f.done)
	f.cancel()
	err := f.ps.Close()
	f.wg.Wait()
	if leave {
		recovery.Do("fleet", f.leave)
	}
	return err
}

func (f *Fleet) listen() {
	defer f.wg.Done()
	defer recovery.Guard("fleet listen")
	ch := f.ps.Channel()
	for {
		select {
		case <-f.done:
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			f.poke()
		}
	}
}

func (f *Fleet) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// loop runs fn every period, or when kicked, until Close; a panic in fn is
// recovered and the next round runs.
func (f *Fleet) loop(name string, period time.Duration, fn func(), kick <-chan struct{}) {
	defer f.wg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		default:
		}
		recovery.Do(name, fn)
		select {
		case <-f.done:
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// ctx bounds one round of Redis calls, and ends with Close.
func (f *Fleet) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(f.base, f.cfg.Timeout)
}

// State returns the current shared state, this member's changes included.
func (f *Fleet) State() *State { return f.state.Load() }

// Stats returns the values for the fleet's metrics.
func (f *Fleet) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Stats{Members: f.members, Pending: len(f.pending), LastError: f.lastErr, Changes: make(map[ChangeKey]uint64, len(f.changes)),
		Skipped: f.skips, Clock: f.clk.stats()}
	for k, v := range f.changes {
		s.Changes[k] = v
	}
	s.Repaired = maps.Clone(f.fixed)
	since := f.synced
	if since.IsZero() {
		since = f.started
	}
	s.SyncAge = f.now().Sub(since)
	s.Isolated = s.SyncAge > f.freshness()
	if s.Isolated {
		s.Members = 1 // no other member's heartbeat can be known fresh
	}
	return s
}

func (f *Fleet) failed(what string, err error) {
	f.mu.Lock()
	f.lastErr = what + ": " + err.Error()
	f.mu.Unlock()
	log.Debugf("Fleet %s: %s: %v", f.cfg.Name, what, err)
	if s := f.Stats(); s.Isolated && !f.isolated.Swap(true) {
		log.Warningf("Fleet %s: Redis unreachable for %v: answering from this member's own probes; changes are kept until it returns: %s",
			f.cfg.Name, s.SyncAge.Round(time.Second), s.LastError)
	}
}

// reached notes a successful read of the state.
func (f *Fleet) reached() {
	f.mu.Lock()
	f.synced, f.lastErr = f.now(), ""
	f.mu.Unlock()
	if f.isolated.Swap(false) {
		log.Infof("Fleet %s: Redis reachable again", f.cfg.Name)
	}
}

// callback runs fn under the callback lock, outside f.mu.
func (f *Fleet) callback(fn func()) {
	f.cb.Lock()
	defer f.cb.Unlock()
	recovery.Do("fleet callback", fn)
}
