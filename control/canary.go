package control

import (
	"errors"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/feed"

	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/runstate"
)

// publish builds the canary's view with its own probes' verdicts, which
// the pool shares with the stable table's by node id and spec.
func (c *Control) publishCanary(now time.Time) time.Time {
	cn := c.canary.Load()
	if cn == nil {
		return time.Time{}
	}
	snap := c.fixed
	if snap == nil {
		snap = cn.Checker.Snapshot()
	}
	links, _, _, _ := c.quality.Links(cn.Table.Index, now, c.opts.QualityMaxAge)
	in, _ := c.inputs(cn.Table, snap, links, cn.Cache, now)
	v, step := policy.NewView(in)
	cn.View.Store(v)
	return step
}

// keepSalt writes a salt generated at this start to the state file.
// Callers hold c.mu, with c started.
func (c *Control) keepSalt() {
	if !c.salt.Fresh {
		return
	}
	c.salt.Fresh = false
	if err := c.saveState(c.state()); err != nil {
		log.Errorf("canary: the new salt could not be saved: the canary's subnets change at the next start: %v", err)
		return
	}
	log.Infof("canary %s: a new salt is kept in %s; instances that must pick the same subnets need the same `salt SECRET`",
		c.opts.Canary.File, c.opts.Admin.State)
}

// canaryCycle lets the autopilot look at its guards after a fold, and
// saves and shares the step it decides. Callers hold c.mu.
func (c *Control) canaryCycle(now time.Time) {
	cn := c.canary.Load()
	if cn == nil || !cn.Cycle(now) {
		return
	}
	if err := c.saveState(c.state(), runstate.CanaryKey); err != nil && !errors.Is(err, admin.ErrSuperseded) {
		log.Errorf("canary %s: the autopilot's step is not saved: %v", cn.Opts.File, err)
	}
}

// observeCanary hands the feed's rows to the canary's cohorts.
func (c *Control) observeCanary(r *feed.Row, source string) {
	if cn := c.canary.Load(); cn != nil {
		cn.Observe(r, source)
	}
}

func pausedWord(paused bool) string {
	if paused {
		return "paused"
	}
	return "running"
}
