// Package plan is the disaster-recovery plans of the admin API: a named
// set of changes (drains, undrains, pins added and removed, the canary
// share) checked when it is stored, applied as one change, and rolled
// back to exactly what each key held before; and the readiness estimate
// that refuses an execution that would overload a node.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"

	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
)

// KeyPrefix is the prefix of a plan's key in the fleet's shared state.
const KeyPrefix = "plan/"

// MaxBody bounds a plan's request body.
const MaxBody = 64 << 10

// Plan is a named set of changes, applied together.
type Plan struct {
	Name    string   `json:"name" yaml:"name"`
	Note    string   `json:"note,omitempty" yaml:"note,omitempty"`
	Drain   []string `json:"drain,omitempty" yaml:"drain,omitempty"`
	Undrain []string `json:"undrain,omitempty" yaml:"undrain,omitempty"`
	Pin     []Pin    `json:"pin,omitempty" yaml:"pin,omitempty"`
	Unpin   []string `json:"unpin,omitempty" yaml:"unpin,omitempty"`
	// Canary is the canary share to set; nil: left as it is.
	Canary *float64 `json:"canary_percent,omitempty" yaml:"canary_percent,omitempty"`
}

// Pin is a pin a plan adds: as POST /v1/pins takes it, without a ttl (a
// plan's pin lasts until the plan is rolled back).
type Pin struct {
	CIDR     string                  `json:"cidr" yaml:"cidr"`
	Nodes    []string                `json:"nodes,omitempty" yaml:"nodes,omitempty"`
	Location *overrides.LocationYAML `json:"location,omitempty" yaml:"location,omitempty"`
	Note     string                  `json:"note,omitempty" yaml:"note,omitempty"`
}

// Entry is the pin as the overrides and the state file hold it, its
// network in canonical form.
func (p *Pin) Entry() overrides.EntryYAML {
	cidr := p.CIDR
	if pr, err := overrides.ParsePrefix(p.CIDR); err == nil {
		cidr = pr.String()
	}
	return overrides.EntryYAML{CIDR: cidr, Nodes: p.Nodes, Location: p.Location, Note: p.Note}
}

// Stored is a plan as the state file and the fleet keep it: with its last
// execution or rollback.
type Stored struct {
	Plan `yaml:",inline"`
	Last *Execution `json:"last,omitempty" yaml:"last,omitempty"`
}

// Execution is one execution or rollback of a plan.
type Execution struct {
	Action string        `json:"action" yaml:"action"` // ActionExecute or ActionRollback
	By     string        `json:"by" yaml:"by"`         // who asked
	Member string        `json:"member,omitempty" yaml:"member,omitempty"`
	At     yamlfile.Time `json:"at" yaml:"at"`
	Forced bool          `json:"forced,omitempty" yaml:"forced,omitempty"`
	// Before is what each key the execution changed held before it, as
	// its JSON; "": the key was absent. A rollback puts these back.
	Before map[string]string `json:"before,omitempty" yaml:"before,omitempty"`
}

// The actions of an Execution.
const (
	ActionExecute  = "execute"
	ActionRollback = "rollback"
)

// Executed reports whether the plan's last action is an execution: its
// changes are in force, and a rollback may put back what they replaced.
func (s *Stored) Executed() bool { return s.Last != nil && s.Last.Action == ActionExecute }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName refuses a name that cannot be a path segment and a key.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("name: %q is not 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Parse reads a plan's body for name, strictly: an unknown field is an
// error, and a "name" in the body must be name.
func Parse(name string, body []byte) (*Plan, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("body: %d bytes, over the limit of %d", len(body), MaxBody)
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("body: %v", err)
	}
	if dec.More() {
		return nil, errors.New("body: more than one JSON value")
	}
	if p.Name != "" && p.Name != name {
		return nil, fmt.Errorf("name: %q in the body, %q in the path", p.Name, name)
	}
	p.Name = name
	return &p, nil
}

// Env is what a plan is checked against.
type Env struct {
	Known  func(id string) bool   // a node of the table (or the canary's candidate)
	Hint   func(id string) string // " (did you mean ...)" for an unknown id; nil: none
	Canary bool                   // the block has a canary line
}

// Check validates p against env; the error names the field and entry.
func (p *Plan) Check(env Env) error {
	if err := CheckName(p.Name); err != nil {
		return err
	}
	if len(p.Drain)+len(p.Undrain)+len(p.Pin)+len(p.Unpin) == 0 && p.Canary == nil {
		return errors.New("the plan changes nothing: give drain, undrain, pin, unpin or canary_percent")
	}
	hint := func(id string) string {
		if env.Hint == nil {
			return ""
		}
		return env.Hint(id)
	}
	node := func(field string, i int, id string) error {
		if id == "" {
			return fmt.Errorf("%s[%d]: empty node id", field, i)
		}
		if env.Known != nil && !env.Known(id) {
			return fmt.Errorf("%s[%d]: node %q is not in the node table%s", field, i, id, hint(id))
		}
		return nil
	}
	drained := map[string]int{}
	for i, id := range p.Drain {
		if err := node("drain", i, id); err != nil {
			return err
		}
		if j, dup := drained[id]; dup {
			return fmt.Errorf("drain[%d]: node %q is in drain[%d] already", i, id, j)
		}
		drained[id] = i
	}
	undrained := map[string]int{}
	for i, id := range p.Undrain {
		if err := node("undrain", i, id); err != nil {
			return err
		}
		if j, dup := drained[id]; dup {
			return fmt.Errorf("undrain[%d]: node %q is in drain[%d] too", i, id, j)
		}
		if j, dup := undrained[id]; dup {
			return fmt.Errorf("undrain[%d]: node %q is in undrain[%d] already", i, id, j)
		}
		undrained[id] = i
	}
	pinned := map[netip.Prefix]string{}
	for i := range p.Pin {
		pin := &p.Pin[i]
		at := fmt.Sprintf("pin[%d]", i)
		pr, err := overrides.ParsePrefix(pin.CIDR)
		if err != nil {
			return fmt.Errorf("%s: field cidr: %v", at, err)
		}
		if prev, dup := pinned[pr]; dup {
			return fmt.Errorf("%s: field cidr: %s is pinned by %s already", at, pr, prev)
		}
		pinned[pr] = at
		for j, id := range pin.Nodes {
			if err := node(at+".nodes", j, id); err != nil {
				return err
			}
		}
		if len(pin.Nodes) > 0 && !slices.ContainsFunc(pin.Nodes, func(id string) bool { _, d := drained[id]; return !d }) {
			return fmt.Errorf("%s: field nodes: every node of the pin is in drain", at)
		}
		y := pin.Entry()
		if _, err := y.Entry(env.Known); err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
	}
	for i, s := range p.Unpin {
		pr, err := overrides.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("unpin[%d]: %v", i, err)
		}
		if prev, dup := pinned[pr]; dup {
			return fmt.Errorf("unpin[%d]: %s is in %s", i, pr, prev)
		}
		pinned[pr] = fmt.Sprintf("unpin[%d]", i)
	}
	if c := p.Canary; c != nil {
		switch {
		case !env.Canary:
			return errors.New("canary_percent: no canary line in the gslb block")
		case math.IsNaN(*c) || *c < 0 || *c > 100:
			return fmt.Errorf("canary_percent: %g is outside 0..100", *c)
		}
	}
	return nil
}
