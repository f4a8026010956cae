package control

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/plan"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/runstate"
	"github.com/gslbdns/gslb/scoring"
)

// plans are an instance's disaster-recovery plans (list, guarded by c.mu)
// and the sample of its recent decisions the readiness estimate reads
// (lock-free: queries write it).
type plans struct {
	list   []plan.Stored
	sample plan.Sampler
}

// sampleAge is how far back the readiness estimate reads decisions.
const sampleAge = 10 * time.Minute

// NoteDecision keeps one in plan.SampleEvery of the stable table's
// answered decisions, made at, for the readiness estimate (of the plans,
// which only the admin API has). It runs on the
// query path: lock-free, allocating only for the decisions it keeps, and
// at is the caller's, which has read the clock already.
func (c *Control) NoteDecision(out *decide.Outcome, at time.Time) {
	d := &out.Decision
	if c.opts.Admin == nil || out.InCanary || d.Winner == nil || out.Servfail || d.Tier == scoring.TierFallback {
		return
	}
	slot, ok := c.plans.sample.Take()
	if !ok {
		return
	}
	c.plans.sample.Keep(slot, &plan.Sample{Record: out.Record.Name, QType: out.QType, Client: policy.ClientOf(&out.Loc.Location),
		Subnet: uint64(out.Unit), Addr: out.Client, Pin: out.Loc.Override.Pin, Node: d.Winner.ID, At: at})
}

// entries is the admin state as the fleet's entries by key. Callers hold
// c.mu.
func (c *Control) entries() map[string]json.RawMessage { return sharedEntries(c.state()) }

// changesOf is changes by key (a key's new JSON; nil deletes it) as
// runstate's changes, in the order of their keys.
func changesOf(m map[string]json.RawMessage) []runstate.Change {
	out := make([]runstate.Change, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, runstate.Change{Key: k, Value: m[k]})
	}
	return out
}

// planConflict is a 409: the plan cannot run as asked (it is executed
// already, or not; or the readiness estimate refuses it).
type planConflict struct {
	Reason    string          `json:"error"`
	Readiness *plan.Readiness `json:"readiness,omitempty"`
}

func (e *planConflict) Error() string { return e.Reason }

func (e *planConflict) Status() int { return http.StatusConflict }

// planView is a plan as GET /v1/plans/{name} shows it: with the
// readiness estimate of executing it now.
type planView struct {
	plan.Stored
	Readiness *plan.Readiness `json:"readiness,omitempty"`
}

// find is the plan named name; nil: none. Callers hold c.mu.
func (c *Control) findPlan(name string) *plan.Stored {
	for i := range c.plans.list {
		if c.plans.list[i].Name == name {
			return &c.plans.list[i]
		}
	}
	return nil
}

// changingPlan is the plan named name, to change: ErrNotFound without
// one, and the state must be writable. Callers hold c.mu.
func (c *Control) changingPlan(name string) (*plan.Stored, error) {
	if err := c.writable(); err != nil {
		return nil, err
	}
	if p := c.findPlan(name); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("plan %q: %w", name, admin.ErrNotFound)
}

// planEnv is what a plan is checked against: the stable table's nodes
// (those the fleet shares) and the canary line. Callers hold c.mu.
func (c *Control) planEnv() plan.Env {
	return plan.Env{Known: knownIn(c.table), Hint: c.nodeHint, Canary: c.canary.Load() != nil}
}

// PlansHandler serves /v1/plans and /v1/plans/{name}[/execute|/rollback].
func (b *adminBackend) PlansHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/plans", func(w http.ResponseWriter, r *http.Request) { admin.Reply(w, b.listPlans(), nil) })
	m.HandleFunc("GET /v1/plans/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, err := b.getPlan(r.PathValue("name"))
		admin.Reply(w, v, err)
	})
	m.HandleFunc("PUT /v1/plans/{name}", b.planChange(func(name string, body []byte, _ bool, who string) (any, error) {
		return b.putPlan(name, body, who)
	}))
	m.HandleFunc("DELETE /v1/plans/{name}", b.planChange(func(name string, _ []byte, force bool, who string) (any, error) {
		return b.deletePlan(name, force, who)
	}))
	m.HandleFunc("POST /v1/plans/{name}/execute", b.planChange(func(name string, _ []byte, force bool, who string) (any, error) {
		return b.executePlan(name, force, who)
	}))
	m.HandleFunc("POST /v1/plans/{name}/rollback", b.planChange(func(name string, _ []byte, _ bool, who string) (any, error) {
		return b.rollbackPlan(name, who)
	}))
	return m
}

// planChange reads a bounded body and force (?force=1, or {"force": true}
// as the body of a DELETE, execute or rollback), then makes the change.
func (b *adminBackend) planChange(fn func(name string, body []byte, force bool, who string) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, plan.MaxBody))
		if err != nil {
			admin.Reply(w, nil, admin.Badf("body: %v", err))
			return
		}
		force := false
		switch v := r.URL.Query().Get("force"); v {
		case "", "0", "false":
		case "1", "true":
			force = true
		default:
			admin.Reply(w, nil, admin.Badf("force: %q is not 1 or 0", v))
			return
		}
		if r.Method != http.MethodPut && len(strings.TrimSpace(string(body))) > 0 {
			var req struct {
				Force bool `json:"force"`
			}
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				admin.Reply(w, nil, admin.Badf("body: %v (only {\"force\": true} is taken)", err))
				return
			}
			force = force || req.Force
		}
		v, err := fn(r.PathValue("name"), body, force, r.RemoteAddr)
		admin.Reply(w, v, err)
	}
}

func (b *adminBackend) listPlans() []plan.Stored {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.plans.list)
	slices.SortFunc(out, func(x, y plan.Stored) int { return strings.Compare(x.Name, y.Name) })
	if out == nil {
		out = []plan.Stored{}
	}
	return out
}

func (b *adminBackend) getPlan(name string) (*planView, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.findPlan(name)
	if p == nil {
		return nil, fmt.Errorf("plan %q: %w", name, admin.ErrNotFound)
	}
	v := &planView{Stored: *p}
	if !p.Executed() && p.Check(c.planEnv()) == nil {
		r := c.readiness(&p.Plan, time.Now())
		v.Readiness = &r
	}
	return v, nil
}

func (b *adminBackend) putPlan(name string, body []byte, who string) (*plan.Stored, error) {
	p, err := plan.Parse(name, body)
	if err != nil {
		return nil, admin.Badf("%v", err)
	}
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.writable(); err != nil {
		return nil, err
	}
	if err := p.Check(c.planEnv()); err != nil {
		return nil, admin.Badf("%v", err)
	}
	if cur := c.findPlan(name); cur != nil && cur.Executed() {
		return nil, &planConflict{Reason: fmt.Sprintf("plan %s is executed: roll it back before changing it", name)}
	}
	if err := admin.CheckPlan(&plan.Stored{Plan: *p}); err != nil {
		return nil, admin.Badf("%v", err)
	}
	s := plan.Stored{Plan: *p}
	v, _ := json.Marshal(&s)
	if err := c.apply(who, runstate.Change{Key: runstate.PlanPrefix + name, Value: v}); err != nil {
		return nil, err
	}
	log.Infof("admin: plan %s stored (by %s)", name, who)
	return &s, nil
}

func (b *adminBackend) deletePlan(name string, force bool, who string) ([]plan.Stored, error) {
	c := b.c
	c.mu.Lock()
	p, err := c.changingPlan(name)
	switch {
	case err != nil:
	case p.Executed() && !force:
		err = &planConflict{Reason: fmt.Sprintf("plan %s is executed: deleting it loses what its rollback puts back; roll it back first, or delete with force", name)}
	default:
		err = c.apply(who, runstate.Change{Key: runstate.PlanPrefix + name})
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	log.Infof("admin: plan %s deleted (by %s)", name, who)
	return b.listPlans(), nil
}

func (b *adminBackend) executePlan(name string, force bool, who string) (*plan.Stored, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.changingPlan(name)
	if err != nil {
		return nil, err
	}
	if p.Executed() {
		return nil, &planConflict{Reason: fmt.Sprintf("plan %s is executed already (by %s at %s): roll it back first",
			name, p.Last.By, p.Last.At.Format(time.RFC3339))}
	}
	if err := p.Check(c.planEnv()); err != nil {
		return nil, admin.Badf("plan %s: %v", name, err)
	}
	now := time.Now()
	r := c.readiness(&p.Plan, now)
	if !r.Ready && !force {
		return nil, &planConflict{Reason: fmt.Sprintf("plan %s: nodes %s would pass max_load %g: not executed (force executes it anyway)",
			name, strings.Join(r.Over, ", "), r.MaxLoad), Readiness: &r}
	}
	cur := c.entries()
	changes, err := c.planChanges(&p.Plan, cur, now)
	if err != nil {
		return nil, err
	}
	ex := &plan.Execution{Action: plan.ActionExecute, By: who, Member: c.memberName(), At: yamlfile.Time{Time: now.UTC()},
		Forced: force && !r.Ready, Before: map[string]string{}}
	for k := range changes {
		ex.Before[k] = string(cur[k])
	}
	s := plan.Stored{Plan: p.Plan, Last: ex}
	v, _ := json.Marshal(&s)
	changes[runstate.PlanPrefix+name] = v
	if err := c.apply(who, changesOf(changes)...); err != nil {
		return nil, err
	}
	forced := ""
	if ex.Forced {
		forced = ", forced past the readiness estimate (over: " + strings.Join(r.Over, ", ") + ")"
	}
	log.Infof("admin: plan %s executed: %s (by %s%s)", name, describePlan(&p.Plan), who, forced)
	return &s, nil
}

func (b *adminBackend) rollbackPlan(name string, who string) (*plan.Stored, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.changingPlan(name)
	if err != nil {
		return nil, err
	}
	if !p.Executed() {
		return nil, &planConflict{Reason: fmt.Sprintf("plan %s is not executed: nothing to roll back", name)}
	}
	changes := map[string]json.RawMessage{}
	for k, v := range p.Last.Before {
		changes[k] = nil
		if v != "" {
			changes[k] = json.RawMessage(v)
		}
	}
	s := plan.Stored{Plan: p.Plan, Last: &plan.Execution{Action: plan.ActionRollback, By: who, Member: c.memberName(), At: yamlfile.Time{Time: time.Now().UTC()}}}
	v, _ := json.Marshal(&s)
	changes[runstate.PlanPrefix+name] = v
	if err := c.apply(who, changesOf(changes)...); err != nil {
		return nil, err
	}
	log.Infof("admin: plan %s rolled back: %s put back as they were (by %s)", name, strings.Join(slices.Sorted(maps.Keys(p.Last.Before)), ", "), who)
	return &s, nil
}

// memberName is this member's fleet id; "" outside a fleet.
func (c *Control) memberName() string {
	if c.member == nil {
		return ""
	}
	return c.member.f.Member()
}

// planChanges is what executing p changes, by key, over the entries cur.
// A node drained already keeps its drain (and its time). Callers hold c.mu.
func (c *Control) planChanges(p *plan.Plan, cur map[string]json.RawMessage, now time.Time) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, id := range p.Drain {
		k := runstate.DrainPrefix + id
		if v, ok := cur[k]; ok {
			out[k] = v
			continue
		}
		out[k] = runstate.SetDrain(id, true, now).Value
	}
	for _, id := range p.Undrain {
		out[runstate.DrainPrefix+id] = nil
	}
	for i := range p.Pin {
		y := p.Pin[i].Entry()
		line, err := admin.CheckPin(&y)
		if err != nil {
			return nil, admin.Badf("pin[%d]: %v", i, err)
		}
		if y.Location != nil {
			if err := checkISP(c.table, y.Location.ISP); err != nil {
				return nil, admin.Badf("pin[%d]: location.isp: %v", i, err)
			}
		}
		out[runstate.PinPrefix+y.CIDR] = json.RawMessage(line)
	}
	for _, s := range p.Unpin {
		pr, _ := overrides.ParsePrefix(s)
		out[runstate.PinPrefix+pr.String()] = nil
	}
	if p.Canary != nil {
		cn := c.canary.Load()
		out[runstate.CanaryKey], _ = json.Marshal(admin.CanaryEntry{Identity: cn.Identity, File: cn.Opts.File, Percent: *p.Canary})
	}
	return out, nil
}

// readiness estimates executing p now from the recent decisions: each is
// decided again in a view with the plan's drains and pins. Callers hold
// c.mu.
func (c *Control) readiness(p *plan.Plan, now time.Time) plan.Readiness {
	drains := maps.Clone(c.drains)
	if drains == nil {
		drains = map[string]policy.Drain{}
	}
	for _, id := range p.Drain {
		drains[id] = policy.Drain{Drained: true, Since: now}
	}
	for _, id := range p.Undrain {
		delete(drains, id) // as after its cooldown
	}
	links, _, _, _ := c.quality.Links(c.table.Index, now, c.opts.QualityMaxAge)
	links, _ = c.feedLinks(links, now)
	snap := c.fixed
	if snap == nil {
		snap = c.checker.Snapshot()
	}
	in, _ := c.inputs(c.table, snap, links, nil, now)
	in.Drains = drains
	v, _ := policy.NewView(in)
	var pins []overrides.Entry
	for i := range p.Pin {
		y := p.Pin[i].Entry()
		if e, err := y.Entry(knownIn(c.table)); err == nil {
			pins = append(pins, e)
		}
	}
	unpinned := map[string]bool{}
	for _, s := range p.Unpin {
		if pr, err := overrides.ParsePrefix(s); err == nil {
			unpinned[pr.String()] = true
		}
	}
	decide := func(s *plan.Sample) string {
		rec := v.Table.Records[s.Record]
		if rec == nil {
			return ""
		}
		q := policy.Query{Record: rec, QType: s.QType, Client: s.Client, Subnet: s.Subnet, Pin: s.Pin}
		if q.Pin != nil && slices.ContainsFunc(q.Pin.Prefixes, func(pr netip.Prefix) bool { return unpinned[pr.String()] }) {
			q.Pin = nil
		}
		for i := range pins {
			if slices.ContainsFunc(pins[i].Prefixes, func(pr netip.Prefix) bool { return pr.Contains(s.Addr) }) {
				q.Pin = &pins[i]
			}
		}
		d := v.Decide(&q)
		if d.Winner == nil {
			return ""
		}
		return d.Winner.ID
	}
	cur := c.view.Load()
	loads := make(map[string]float64, len(cur.Table.Nodes))
	drained := map[string]bool{}
	for i := range cur.Table.Nodes {
		id := cur.Table.Nodes[i].ID
		loads[id] = cur.Nodes[i].Load
		drained[id] = drains[id].Drained
	}
	maxLoad := c.opts.Params.MaxLoad
	if c.opts.Params.ShedHigh > 0 {
		maxLoad = c.opts.Params.ShedHigh
	}
	return plan.Estimate(c.plans.sample.Recent(now.Add(-sampleAge)), decide, loads, drained, maxLoad)
}

// describePlan is what a plan changes, for the log.
func describePlan(p *plan.Plan) string {
	var parts []string
	if len(p.Drain) > 0 {
		parts = append(parts, "drained "+strings.Join(p.Drain, ","))
	}
	if len(p.Undrain) > 0 {
		parts = append(parts, "undrained "+strings.Join(p.Undrain, ","))
	}
	for _, pin := range p.Pin {
		parts = append(parts, "pinned "+pin.CIDR)
	}
	if len(p.Unpin) > 0 {
		parts = append(parts, "unpinned "+strings.Join(p.Unpin, ","))
	}
	if p.Canary != nil {
		parts = append(parts, fmt.Sprintf("canary at %g%%", *p.Canary))
	}
	return strings.Join(parts, "; ")
}
