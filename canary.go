package gslb

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"
)

// Policies a decision is made under.
const (
	policyStable = "stable"
	policyCanary = "canary"
)

// canaryBasis is the resolution of the share: 1/10000 of the subnets.
const canaryBasis = 10000

// canary is one candidate node table in rollout. A new file or canary
// line makes a new one: its counters and rollback start afresh.
type canary struct {
	opts      config.Canary
	table     *table.Table
	checker   *health.Checker
	decisions *policy.Cache
	view      atomic.Pointer[policy.View]
	identity  string // the line and the file's content
	keys      canaryKeys
	// seen is the set of subnets counted for the rollback in the current
	// window: each slot holds the window (from born) its subnet was last
	// counted in. Fixed size: a flood of new subnets only thins the
	// sample, alike for both policies.
	seen *[seenSlots]atomic.Uint32
	born time.Time

	// onRollback tells the control plane, which saves the state.
	onRollback func()

	// share is the part of the subnets in the canary, in 1/10000: the
	// line's PERCENT, the admin API's, or 0 once rolled back. Every query
	// reads it: it is kept off the counters' cache lines.
	share atomic.Uint32
	_     [60]byte
	// Since the canary started: its decisions, and the province matches
	// of both policies, for the rollback.
	decided                 atomic.Uint64
	canarySame, canaryCross atomic.Uint64
	stableSame, stableCross atomic.Uint64
	rolledBack              atomic.Bool
	reason                  atomic.Pointer[string]
	checkMu                 sync.Mutex
}

// rolledBackCanaries remembers, for the process, the canaries that rolled
// back, so that a Corefile reload that changes neither the canary line
// nor its file keeps it rolled back.
var rolledBackCanaries sync.Map // identity -> reason

func canaryIdentity(o *config.Canary, t *table.Table) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%g\x00%d\x00", o.File, o.Percent, o.RollbackCross, o.RollbackMin)
	h.Write(t.Hash[:])
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func newCanary(o config.Canary, t *table.Table, keys canaryKeys) *canary {
	cn := &canary{opts: o, table: t, decisions: policy.NewCache(), identity: canaryIdentity(&o, t),
		keys: keys, seen: new([seenSlots]atomic.Uint32), born: time.Now()}
	cn.share.Store(percentToShare(o.Percent))
	if r, ok := rolledBackCanaries.Load(cn.identity); ok {
		reason := r.(string)
		cn.rolledBack.Store(true)
		cn.reason.Store(&reason)
		cn.share.Store(0)
	}
	canaryRolledBack.Set(b2f(cn.rolledBack.Load()))
	return cn
}

func percentToShare(p float64) uint32 { return uint32(p*canaryBasis/100 + 0.5) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// picks reports whether the subnet is in the canary: a keyed hash of it
// below the share, so that raising the share only adds subnets.
func (cn *canary) picks(k locate.Key) bool {
	share := cn.share.Load()
	if share == 0 {
		return false
	}
	return keyedHash(uint64(k), cn.keys.pick)%canaryBasis < uint64(share)
}

// seenBits is log2 of the window's set size: 256 KiB per canary.
const (
	seenBits  = 16
	seenSlots = 1 << seenBits
)

// firstInWindow reports whether the subnet is counted at now: the first
// time its slot is claimed in the window. Two subnets sharing a slot count
// once, which thins the sample without favouring either policy.
func (cn *canary) firstInWindow(k locate.Key, now time.Time) bool {
	w := uint32(max(now.Sub(cn.born), 0)/cn.opts.Window) + 1
	slot := &cn.seen[keyedHash(uint64(k), cn.keys.seen)>>(64-seenBits)]
	return slot.Load() != w && slot.Swap(w) != w
}

// count notes one decision's province match under its policy, for each
// subnet at most once per window, and, every so often, compares the two
// ratios: a flood from a few subnets weighs as a few subnets.
func (cn *canary) count(canaryPolicy, located, same bool, k locate.Key, now time.Time) {
	if !cn.firstInWindow(k, now) {
		return
	}
	if canaryPolicy {
		n := cn.decided.Add(1)
		if located {
			if same {
				cn.canarySame.Add(1)
			} else {
				cn.canaryCross.Add(1)
			}
		}
		if cn.opts.RollbackCross >= 0 && n >= cn.opts.RollbackMin && n%32 == 0 {
			cn.check()
		}
		return
	}
	if located {
		if same {
			cn.stableSame.Add(1)
		} else {
			cn.stableCross.Add(1)
		}
	}
}

// ratios are the canary's and stable's cross-province ratios so far.
func (cn *canary) ratios() (canaryX, stableX float64) {
	return ratio(cn.canaryCross.Load(), cn.canarySame.Load()), ratio(cn.stableCross.Load(), cn.stableSame.Load())
}

func ratio(cross, same uint64) float64 {
	if cross+same == 0 {
		return 0
	}
	return float64(cross) / float64(cross+same)
}

// check rolls the canary back when its cross-province ratio exceeds
// stable's by more than rollback_cross.
func (cn *canary) check() {
	if cn.rolledBack.Load() {
		return
	}
	cn.checkMu.Lock()
	defer cn.checkMu.Unlock()
	// Both ratios need rollback_min located answers behind them: a ratio
	// of a few answers, or of none (stable at 100%), says nothing.
	min := cn.opts.RollbackMin
	if cn.canarySame.Load()+cn.canaryCross.Load() < min || cn.stableSame.Load()+cn.stableCross.Load() < min {
		return
	}
	c, s := cn.ratios()
	if cn.rolledBack.Load() || c-s <= cn.opts.RollbackCross {
		return
	}
	reason := fmt.Sprintf("cross-province ratio %.4f against stable's %.4f after %d counted canary decisions: more than rollback_cross %g higher",
		c, s, cn.decided.Load(), cn.opts.RollbackCross)
	cn.rollBack(reason)
	log.Warningf("Canary %s rolled back to 0%%: %s", cn.opts.File, reason)
	if cn.onRollback != nil {
		cn.onRollback()
	}
}

// rollBack sets the share to 0 and remembers why.
func (cn *canary) rollBack(reason string) {
	cn.reason.Store(&reason)
	cn.share.Store(0)
	cn.rolledBack.Store(true)
	rolledBackCanaries.Store(cn.identity, reason)
	canaryRolledBack.Set(1)
}

// setPercent sets the share from the admin API; it clears a rollback:
// the operator starts a new experiment.
func (cn *canary) setPercent(p float64) {
	if cn.rolledBack.Load() {
		cn.checkMu.Lock()
		cn.rolledBack.Store(false)
		cn.reason.Store(nil)
		rolledBackCanaries.Delete(cn.identity)
		for _, c := range []*atomic.Uint64{&cn.decided, &cn.canarySame, &cn.canaryCross, &cn.stableSame, &cn.stableCross} {
			c.Store(0)
		}
		cn.checkMu.Unlock()
		canaryRolledBack.Set(0)
	}
	cn.share.Store(percentToShare(p))
}

// percent is the share in force, in percent.
func (cn *canary) percent() float64 { return float64(cn.share.Load()) * 100 / canaryBasis }

// publish builds the canary's view with its own probes' verdicts, which
// the pool shares with the stable table's by node id and spec.
func (c *control) publishCanary(now time.Time) time.Time {
	cn := c.canary.Load()
	if cn == nil {
		return time.Time{}
	}
	snap := c.fixed
	if snap == nil {
		snap = cn.checker.Snapshot()
	}
	links, _, _, _ := c.quality.Links(cn.table.Index, now, c.opts.QualityMaxAge)
	v, step := policy.NewView(policy.Inputs{Table: cn.table, Snapshot: snap, Params: &c.opts.Params,
		Links: links, Serial: c.serial, Now: now, Cooldown: c.opts.Cooldown, Cache: cn.decisions, Drains: c.drains})
	cn.view.Store(v)
	return step
}

// canaryKeys key the canary's hashes of a subnet: pick chooses the subnets
// in the canary, seen places them in the window's set. Both come from the
// deployment's secret salt, so a client cannot compute which subnets are
// in the canary, nor aim at a slot of the set.
type canaryKeys struct{ pick, seen uint64 }

func keysOf(salt string) canaryKeys {
	h := sha256.Sum256([]byte("gslb canary salt\x00" + salt))
	return canaryKeys{pick: binary.BigEndian.Uint64(h[:8]), seen: binary.BigEndian.Uint64(h[8:16])}
}

// keyedHash mixes x under key; the second round keeps x's structure
// (neighbouring subnets) from showing through the key.
func keyedHash(x, key uint64) uint64 {
	return scoring.Mix64(scoring.Mix64(x^key) ^ bits.RotateLeft64(key, 32))
}

// saltSource is where a control's canary salt comes from.
type saltSource uint8

const (
	saltNone    saltSource = iota // no canary line
	saltOption                    // the canary line's salt
	saltState                     // the admin state file's canary_salt
	saltProcess                   // this process's: new at each start
)

// canarySalt is a control's salt. stored is the state file's canary_salt,
// written back on every save (with or without a canary line); fresh: it
// was generated now and is saved once the instance starts.
type canarySalt struct {
	keys   canaryKeys
	source saltSource
	stored string
	fresh  bool
}

// processSalt is the salt of canaries without a salt or a state file:
// the same across Corefile reloads, new at each start.
var processSalt = sync.OnceValue(newSalt)

func newSalt() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resolveSalt picks the canary's salt: the canary line's `salt`, else the
// admin state file's (generated at the first start and kept there), else
// the process's, with a warning: the canary's subnets then change at
// every start.
func resolveSalt(o *config.Options) canarySalt {
	var s canarySalt
	stateFile := ""
	if o.Admin != nil && o.Admin.State != "" {
		stateFile = o.Admin.State
		// Read again, with its errors, when the state is restored.
		if st, err := admin.LoadState(stateFile, o.MaxFileSize, nil); err == nil {
			s.stored = st.CanarySalt
		} else {
			stateFile = ""
		}
	}
	switch {
	case o.Canary == nil:
	case o.Canary.Salt != "":
		s.keys, s.source = keysOf(o.Canary.Salt), saltOption
	case stateFile != "":
		if s.stored == "" {
			s.stored, s.fresh = newSalt(), true
		}
		s.keys, s.source = keysOf(s.stored), saltState
	default:
		s.keys, s.source = keysOf(processSalt()), saltProcess
		log.Warningf("canary %s: no salt and no readable admin state file: the canary's subnets are drawn anew at every start; "+
			"set `salt SECRET` in the canary block (the same on every instance) or `admin ADDRESS { state FILE }`", o.Canary.File)
	}
	return s
}

// keepSalt writes a salt generated at this start to the state file.
// Callers hold c.mu, with c started.
func (c *control) keepSalt() {
	if !c.salt.fresh {
		return
	}
	c.salt.fresh = false
	if err := c.saveState(c.state()); err != nil {
		log.Errorf("canary: the new salt could not be saved: the canary's subnets change at the next start: %v", err)
		return
	}
	log.Infof("canary %s: a new salt is kept in %s; instances that must pick the same subnets need the same `salt SECRET`",
		c.opts.Canary.File, c.opts.Admin.State)
}
