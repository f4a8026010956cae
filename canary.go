package gslb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

// canarySalt makes the canary's subnets independent of everything else
// keyed by subnet (ties, the spread, shedding). It is fixed, so that every
// instance and every restart picks the same subnets.
const canarySalt = 0x6a09e667f3bcc908

// canaryBasis is the resolution of the share: 1/10000 of the subnets.
const canaryBasis = 10000

// canary is one candidate node table in rollout. A new file or canary
// line makes a new one: its counters and rollback start afresh.
type canary struct {
	opts      canaryOpts
	table     *table.Table
	checker   *health.Checker
	decisions *policy.Decisions
	view      atomic.Pointer[policy.View]
	identity  string // the line and the file's content

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

func canaryIdentity(o *canaryOpts, t *table.Table) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%g\x00%g\x00%d\x00", o.file, o.percent, o.rollbackCross, o.rollbackMin)
	h.Write(t.Hash[:])
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func newCanary(o canaryOpts, t *table.Table) *canary {
	cn := &canary{opts: o, table: t, decisions: policy.NewDecisions(), identity: canaryIdentity(&o, t)}
	cn.share.Store(percentToShare(o.percent))
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

// picks reports whether the subnet is in the canary: a salted hash of it
// below the share, so that raising the share only adds subnets.
func (cn *canary) picks(k locate.Key) bool {
	share := cn.share.Load()
	if share == 0 {
		return false
	}
	return scoring.Mix64(uint64(k)^canarySalt)%canaryBasis < uint64(share)
}

// count notes one decision's province match under its policy and, every
// so often, compares the two ratios.
func (cn *canary) count(canaryPolicy, located, same bool) {
	if canaryPolicy {
		n := cn.decided.Add(1)
		if located {
			if same {
				cn.canarySame.Add(1)
			} else {
				cn.canaryCross.Add(1)
			}
		}
		if cn.opts.rollbackCross >= 0 && n >= cn.opts.rollbackMin && n%32 == 0 {
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
	min := cn.opts.rollbackMin
	if cn.canarySame.Load()+cn.canaryCross.Load() < min || cn.stableSame.Load()+cn.stableCross.Load() < min {
		return
	}
	c, s := cn.ratios()
	if cn.rolledBack.Load() || c-s <= cn.opts.rollbackCross {
		return
	}
	reason := fmt.Sprintf("cross-province ratio %.4f against stable's %.4f after %d canary decisions: more than rollback_cross %g higher",
		c, s, cn.decided.Load(), cn.opts.rollbackCross)
	cn.rollBack(reason)
	log.Warningf("Canary %s rolled back to 0%%: %s", cn.opts.file, reason)
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
	links, _, _, _ := c.quality.Links(cn.table.Index, now, c.opts.qualityMaxAge)
	v, step := policy.NewView(policy.Inputs{Table: cn.table, Snapshot: snap, Params: &c.opts.params,
		Links: links, Serial: c.serial, Now: now, Cooldown: c.opts.cooldown, Cache: cn.decisions, Drains: c.drains})
	cn.view.Store(v)
	return step
}
