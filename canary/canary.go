// Package canary is the rollout of a candidate node table to a share of
// the client subnets: which subnets it takes, the province matches of
// both policies, and the rollback when the candidate does worse.
package canary

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/table"
)

var log = clog.NewWithPlugin(config.Name)

// Policies a decision is made under.
const (
	PolicyStable = "stable"
	PolicyCanary = "canary"
)

// basis is the resolution of the share: 1/10000 of the subnets.
const basis = 10000

// Rollout is one candidate node table in rollout. A new file or canary
// line makes a new one: its counters and rollback start afresh.
type Rollout struct {
	Opts    config.Canary
	Table   *table.Table
	Checker *health.Checker // set by the control plane
	Cache   *policy.Cache
	// View is the candidate table's view, which the control plane
	// publishes; queries of subnets in the canary decide with it.
	View     atomic.Pointer[policy.View]
	Identity string // the line and the file's content
	keys     Keys
	// seen is the set of subnets counted for the rollback in the current
	// window: each slot holds the window (from born) its subnet was last
	// counted in. Fixed size: a flood of new subnets only thins the
	// sample, alike for both policies.
	seen *[seenSlots]atomic.Uint32
	born time.Time

	// OnRollback tells the control plane, which saves the state.
	OnRollback func()
	// Shared: a fleet counts and decides the rollback, not this rollout
	// alone (set before queries run).
	Shared bool

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

	pilot *pilot // nil without a plan
}

// rolledBackCanaries remembers, for the process, the canaries that rolled
// back, so that a Corefile reload that changes neither the canary line
// nor its file keeps it rolled back.
var rolledBackCanaries sync.Map // identity -> reason

func identity(o *config.Canary, t *table.Table) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%g\x00%d\x00", o.File, o.Percent, o.RollbackCross, o.RollbackMin)
	if p := o.Plan; p != nil {
		// A changed plan starts afresh; the same one keeps its step.
		fmt.Fprintf(h, "plan\x00%v\x00%s\x00%v\x00%g\x00%g\x00", p.Steps, p.Dwell, p.Guards, p.MinSamples, p.SourceShare)
	}
	h.Write(t.Hash[:])
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// New is the rollout of t as o says, its subnets chosen under keys. It
// sets no metric: the control plane records the rollout when it serves.
func New(o config.Canary, t *table.Table, keys Keys) *Rollout {
	r := &Rollout{Opts: o, Table: t, Cache: policy.NewCache(), Identity: identity(&o, t),
		keys: keys, seen: new([seenSlots]atomic.Uint32), born: time.Now()}
	r.share.Store(PercentToShare(o.Percent))
	if o.Plan != nil {
		r.pilot = newPilot(o.Plan, time.Now())
	}
	if reason, ok := rolledBackCanaries.Load(r.Identity); ok {
		r.rollBack(reason.(string))
	}
	return r
}

// PercentToShare is a percent of the subnets in the share's resolution.
func PercentToShare(p float64) uint32 { return uint32(p*basis/100 + 0.5) }

// Picks reports whether the subnet is in the canary: a keyed hash of it
// below the share, so that raising the share only adds subnets.
func (r *Rollout) Picks(k locate.Key) bool {
	share := r.share.Load()
	if share == 0 {
		return false
	}
	return keyedHash(uint64(k), r.keys.pick)%basis < uint64(share)
}

// Active reports whether a share of the subnets is in the canary.
func (r *Rollout) Active() bool { return r.share.Load() > 0 }

// seenBits is log2 of the window's set size: 256 KiB per canary.
const (
	seenBits  = 16
	seenSlots = 1 << seenBits
)

// firstInWindow reports whether the subnet is counted at now: the first
// time its slot is claimed in the window. Two subnets sharing a slot count
// once, which thins the sample without favouring either policy.
func (r *Rollout) firstInWindow(k locate.Key, now time.Time) bool {
	w := uint32(max(now.Sub(r.born), 0)/r.Opts.Window) + 1
	slot := &r.seen[keyedHash(uint64(k), r.keys.seen)>>(64-seenBits)]
	return slot.Load() != w && slot.Swap(w) != w
}

// Count notes one decision's province match under its policy, for each
// subnet at most once per window, and, every so often, compares the two
// ratios: a flood from a few subnets weighs as a few subnets.
func (r *Rollout) Count(canaryPolicy, located, same bool, k locate.Key, now time.Time) {
	if !r.firstInWindow(k, now) {
		return
	}
	if canaryPolicy {
		n := r.decided.Add(1)
		if located {
			if same {
				r.canarySame.Add(1)
			} else {
				r.canaryCross.Add(1)
			}
		}
		if !r.Shared && r.Opts.RollbackCross >= 0 && n >= r.Opts.RollbackMin && n%32 == 0 {
			r.check()
		}
		return
	}
	if located {
		if same {
			r.stableSame.Add(1)
		} else {
			r.stableCross.Add(1)
		}
	}
}

// Ratios are the canary's and stable's cross-province ratios so far.
func (r *Rollout) Ratios() (canaryCross, stableCross float64) {
	return ratio(r.canaryCross.Load(), r.canarySame.Load()), ratio(r.stableCross.Load(), r.stableSame.Load())
}

func ratio(cross, same uint64) float64 {
	if cross+same == 0 {
		return 0
	}
	return float64(cross) / float64(cross+same)
}

// Counts are the province matches counted so far: canary same and cross,
// stable same and cross.
func (r *Rollout) Counts() [4]uint64 {
	return [4]uint64{r.canarySame.Load(), r.canaryCross.Load(), r.stableSame.Load(), r.stableCross.Load()}
}

// Judge says whether counts (as Counts orders them; a fleet's totals)
// call for the rollback, and why.
func (r *Rollout) Judge(counts [4]uint64) (string, bool) {
	least := r.Opts.RollbackMin
	if r.Opts.RollbackCross < 0 || counts[0]+counts[1] < least || counts[2]+counts[3] < least {
		return "", false
	}
	c, s := ratio(counts[1], counts[0]), ratio(counts[3], counts[2])
	if c-s <= r.Opts.RollbackCross {
		return "", false
	}
	return fmt.Sprintf("cross-province ratio %.4f against stable's %.4f after %d counted canary decisions: more than rollback_cross %g higher",
		c, s, counts[0]+counts[1], r.Opts.RollbackCross), true
}

// Apply rolls the canary back for a rollback decided elsewhere (by a fleet
// member); false when it had rolled back already.
func (r *Rollout) Apply(reason string) bool {
	r.checkMu.Lock()
	defer r.checkMu.Unlock()
	if r.rolledBack.Load() {
		return false
	}
	r.rollBack(reason)
	rolledBackGauge.Set(1)
	log.Warningf("Canary %s rolled back to 0%%: %s", r.Opts.File, reason)
	return true
}

// check rolls the canary back when its cross-province ratio exceeds
// stable's by more than rollback_cross.
func (r *Rollout) check() {
	if r.rolledBack.Load() {
		return
	}
	r.checkMu.Lock()
	defer r.checkMu.Unlock()
	// Both ratios need rollback_min located answers behind them: a ratio
	// of a few answers, or of none (stable at 100%), says nothing.
	least := r.Opts.RollbackMin
	if r.canarySame.Load()+r.canaryCross.Load() < least || r.stableSame.Load()+r.stableCross.Load() < least {
		return
	}
	c, s := r.Ratios()
	if r.rolledBack.Load() || c-s <= r.Opts.RollbackCross {
		return
	}
	reason := fmt.Sprintf("cross-province ratio %.4f against stable's %.4f after %d counted canary decisions: more than rollback_cross %g higher",
		c, s, r.decided.Load(), r.Opts.RollbackCross)
	r.rollBack(reason)
	rolledBackGauge.Set(1)
	log.Warningf("Canary %s rolled back to 0%%: %s", r.Opts.File, reason)
	if r.OnRollback != nil {
		r.OnRollback()
	}
}

// RollBack sets the share to 0 and remembers why: the admin state says
// the canary rolled back.
func (r *Rollout) RollBack(reason string) { r.rollBack(reason) }

func (r *Rollout) rollBack(reason string) {
	r.reason.Store(&reason)
	r.share.Store(0)
	r.rolledBack.Store(true)
	rolledBackCanaries.Store(r.Identity, reason)
}

// SetPercent sets the share from the admin API; it clears a rollback:
// the operator starts a new experiment.
func (r *Rollout) SetPercent(p float64) {
	if r.rolledBack.Load() {
		r.checkMu.Lock()
		r.rolledBack.Store(false)
		r.reason.Store(nil)
		rolledBackCanaries.Delete(r.Identity)
		for _, c := range []*atomic.Uint64{&r.decided, &r.canarySame, &r.canaryCross, &r.stableSame, &r.stableCross} {
			c.Store(0)
		}
		r.checkMu.Unlock()
		rolledBackGauge.Set(0)
	}
	r.share.Store(PercentToShare(p))
}

// Restore sets the share the admin state saved, unless the canary rolled
// back since.
func (r *Rollout) Restore(p float64) {
	if !r.rolledBack.Load() {
		r.share.Store(PercentToShare(p))
	}
}

// Share is the share in force, in the resolution of PercentToShare.
func (r *Rollout) Share() uint32 { return r.share.Load() }

// Revert undoes a SetPercent that could not be saved.
func (r *Rollout) Revert(share uint32, rolledBack bool) {
	r.share.Store(share)
	if rolledBack {
		r.rolledBack.Store(true)
	}
}

// ShareToPercent is a share in percent.
func ShareToPercent(s uint32) float64 { return float64(s) * 100 / basis }

// Percent is the share in force, in percent.
func (r *Rollout) Percent() float64 { return ShareToPercent(r.share.Load()) }

// RolledBack reports whether the canary rolled back, and why.
func (r *Rollout) RolledBack() (bool, string) {
	back, reason := r.rolledBack.Load(), ""
	if p := r.reason.Load(); p != nil {
		reason = *p
	}
	return back, reason
}

// Decided is the canary's decisions counted since it (re)started.
func (r *Rollout) Decided() uint64 { return r.decided.Load() }

// Record sets the rollback gauge to what r says: the control plane calls
// it when the instance that holds r serves.
func (r *Rollout) Record() {
	if r.pilot != nil {
		stepGauge.Set(r.Percent())
	}
	if r.rolledBack.Load() {
		rolledBackGauge.Set(1)
	} else {
		rolledBackGauge.Set(0)
	}
}
