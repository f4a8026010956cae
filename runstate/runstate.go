// Package runstate is the home of gslb's runtime state: what the admin API
// changes (drains, pins, the canary's share) and what a start generates
// (the canary's salt), and the disaster-recovery plans, as entries by key. Each kind of entry is declared
// once, in Kinds: its key, its JSON type, its check against the node
// table, and how it feeds the policy's inputs. The state file (package
// admin) and the fleet (package fleet, one Redis hash field per key) are
// two backings of the same entries; package control changes them through
// one path (Control.Apply).
//
// A new kind of state goes here: a type, a Kind in Kinds, a field of
// State; nothing else converts it.
package runstate

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/plan"
	"github.com/gslbdns/gslb/policy"
)

// Keys of the entries.
const (
	DrainPrefix = "drain/"
	PinPrefix   = "pin/"
	CanaryKey   = "canary"
	SaltKey     = "salt"
	PlanPrefix  = plan.KeyPrefix
)

// Drain is a drained node; its key is drain/NODE.
type Drain struct {
	Node  string        `yaml:"node" json:"node"`
	Since yamlfile.Time `yaml:"since" json:"since"`
}

// Pin is a network pinned to nodes or a location; its key is pin/CIDR.
type Pin = overrides.EntryYAML

// Canary is a canary share the API set, or a rollback. It holds only while
// the canary line and the candidate file are those of Identity.
type Canary struct {
	Identity   string  `yaml:"identity" json:"identity"` // a digest of the canary line and the candidate file
	File       string  `yaml:"file" json:"file"`         // for the reader
	Percent    float64 `yaml:"percent" json:"percent"`
	RolledBack bool    `yaml:"rolled_back,omitempty" json:"rolled_back,omitempty"`
	Reason     string  `yaml:"reason,omitempty" json:"reason,omitempty"`
	// Autopilot is the autopilot's step, its start and the history; nil
	// without a plan in the canary block.
	Autopilot *Autopilot `yaml:"autopilot,omitempty" json:"autopilot,omitempty"`
}

// Autopilot is where the canary's autopilot is: it survives a restart
// and, in a fleet, holds for every member.
type Autopilot struct {
	Step     int              `yaml:"step" json:"step"` // index into the plan's steps
	Since    time.Time        `yaml:"since" json:"since"`
	Paused   bool             `yaml:"paused,omitempty" json:"paused,omitempty"`
	Complete bool             `yaml:"complete,omitempty" json:"complete,omitempty"`
	History  []AutopilotEvent `yaml:"history,omitempty" json:"history,omitempty"`
}

// AutopilotEvent is one step, rollback, pause or resume.
type AutopilotEvent struct {
	At      time.Time `yaml:"at" json:"at"`
	Action  string    `yaml:"action" json:"action"` // start, advance, complete, rollback, pause, resume
	Percent float64   `yaml:"percent" json:"percent"`
	Reason  string    `yaml:"reason,omitempty" json:"reason,omitempty"`
	By      string    `yaml:"by,omitempty" json:"by,omitempty"`
}

// MaxAutopilotHistory bounds the history kept: the oldest events go first.
const MaxAutopilotHistory = 100

// State is the entries decoded and checked; the state file (admin.State)
// holds it inline.
type State struct {
	Drains []Drain `yaml:"drains,omitempty" json:"drains,omitempty"`
	Pins   []Pin   `yaml:"pins,omitempty" json:"pins,omitempty"`
	Canary *Canary `yaml:"canary,omitempty" json:"canary,omitempty"`
	// CanarySalt keys the canary's choice of subnets when the Corefile
	// sets no salt: generated at the first start, then kept.
	CanarySalt string `yaml:"canary_salt,omitempty" json:"canary_salt,omitempty"`
	// Plans are the disaster-recovery plans, with their last execution;
	// the key of each is plan/NAME.
	Plans []plan.Stored `yaml:"plans,omitempty" json:"plans,omitempty"`
}

// Known reports whether a node id is in the node table.
type Known func(id string) bool

// Kind declares one kind of entry.
type Kind struct {
	Name string
	// Prefix of its keys (drain/, pin/), or its one key (canary).
	Prefix string
	Single bool
	// Shared kinds go to the fleet; the others stay in the state file.
	Shared bool
	// decode checks the entry of key against the node table and adds it
	// to st; a note says what of it the table does not have.
	decode func(key string, raw json.RawMessage, known Known, st *State) (note string, err error)
	encode func(st *State, add func(key string, v any))
}

// Kinds are every kind of runtime state.
var Kinds = []Kind{
	{Name: "drain", Prefix: DrainPrefix, Shared: true, decode: decodeDrain, encode: func(st *State, add func(string, any)) {
		for _, d := range st.Drains {
			d.Since = yamlfile.Time{Time: d.Since.UTC().Round(0)}
			add(DrainPrefix+d.Node, d)
		}
	}},
	{Name: "pin", Prefix: PinPrefix, Shared: true, decode: decodePin, encode: func(st *State, add func(string, any)) {
		for i := range st.Pins {
			add(PinPrefix+PinKey(&st.Pins[i]), st.Pins[i])
		}
	}},
	{Name: "canary", Prefix: CanaryKey, Single: true, Shared: true, decode: decodeCanary, encode: func(st *State, add func(string, any)) {
		if st.Canary != nil {
			add(CanaryKey, st.Canary)
		}
	}},
	{Name: "plan", Prefix: PlanPrefix, Shared: true, decode: decodePlan, encode: func(st *State, add func(string, any)) {
		for i := range st.Plans {
			add(PlanPrefix+st.Plans[i].Name, &st.Plans[i])
		}
	}},
	{Name: "salt", Prefix: SaltKey, Single: true, decode: decodeSalt, encode: func(st *State, add func(string, any)) {
		if st.CanarySalt != "" {
			add(SaltKey, st.CanarySalt)
		}
	}},
}

// KindOf is the kind of key; false for a key no kind declares.
func KindOf(key string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Single && key == k.Prefix || !k.Single && strings.HasPrefix(key, k.Prefix) && len(key) > len(k.Prefix) {
			return k, true
		}
	}
	return Kind{}, false
}

// Shared reports whether key is one the fleet shares.
func Shared(key string) bool {
	k, ok := KindOf(key)
	return ok && k.Shared
}

// PinKey is the part of a pin's key after pin/.
func PinKey(p *Pin) string {
	if p.CIDR != "" {
		return p.CIDR
	}
	return strings.Join(p.CIDRs, ",")
}

// CheckDrain checks a drain against the node table: an error for a
// malformed one; keep false for a node the table lacks.
func CheckDrain(d Drain, known Known) (keep bool, err error) {
	switch {
	case d.Node == "":
		return false, fmt.Errorf("field node: missing")
	case d.Since.IsZero():
		return false, fmt.Errorf("field since: missing")
	}
	return known == nil || known(d.Node), nil
}

// CheckPin checks a pin against the node table: an error for a malformed
// one; the nodes the table lacks are dropped from it (gone), and the pin
// too (keep false) when nothing is left.
func CheckPin(p Pin, known Known) (out Pin, gone []string, keep bool, err error) {
	if _, err := p.Entry(nil); err != nil {
		return p, nil, false, err
	}
	if known == nil {
		return p, nil, true, nil
	}
	kept := slices.DeleteFunc(slices.Clone(p.Nodes), func(id string) bool { return !known(id) })
	if len(kept) == len(p.Nodes) {
		return p, nil, true, nil
	}
	gone = slices.DeleteFunc(slices.Clone(p.Nodes), known)
	if len(kept) == 0 && p.Location == nil {
		return p, gone, false, nil
	}
	p.Nodes = kept
	if len(kept) == 0 {
		p.Nodes = nil
	}
	return p, gone, true, nil
}

// CheckCanary checks a canary entry.
func CheckCanary(c *Canary) error {
	if c.Percent < 0 || c.Percent > 100 {
		return fmt.Errorf("field percent: %g is outside 0..100", c.Percent)
	}
	if p := c.Autopilot; p != nil {
		switch {
		case p.Step < 0 || p.Step > 100:
			return fmt.Errorf("autopilot: field step: %d is outside 0..100", p.Step)
		case len(p.History) > MaxAutopilotHistory:
			return fmt.Errorf("autopilot: field history: %d events, at most %d", len(p.History), MaxAutopilotHistory)
		}
	}
	return nil
}

func decodeDrain(key string, raw json.RawMessage, known Known, st *State) (string, error) {
	var d Drain
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("not a drain: %w", err)
	}
	if id := strings.TrimPrefix(key, DrainPrefix); d.Node != id {
		return "", fmt.Errorf("field node: %q, not %q", d.Node, id)
	}
	keep, err := CheckDrain(d, known)
	if err != nil || !keep {
		return fmt.Sprintf("node %s is not in the node table", d.Node), err
	}
	st.Drains = append(st.Drains, d)
	return "", nil
}

func decodePin(key string, raw json.RawMessage, known Known, st *State) (string, error) {
	var p Pin
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("not a pin: %w", err)
	}
	if k := PinPrefix + PinKey(&p); k != key {
		return "", fmt.Errorf("a pin of %s under %s", PinKey(&p), key)
	}
	p, gone, keep, err := CheckPin(p, known)
	if err != nil {
		return "", err
	}
	note := ""
	if len(gone) > 0 {
		note = fmt.Sprintf("nodes %v are not in the node table", gone)
	}
	if keep {
		st.Pins = append(st.Pins, p)
	}
	return note, nil
}

func decodeCanary(_ string, raw json.RawMessage, _ Known, st *State) (string, error) {
	var c Canary
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("not a canary entry: %w", err)
	}
	if err := CheckCanary(&c); err != nil {
		return "", err
	}
	st.Canary = &c
	return "", nil
}

// CheckPlan checks a stored plan's name and fields; its nodes are checked
// when it is executed, against the node table of the time.
func CheckPlan(p *plan.Stored) error {
	return p.Check(plan.Env{Canary: true})
}

func decodePlan(key string, raw json.RawMessage, _ Known, st *State) (string, error) {
	var p plan.Stored
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("not a plan: %w", err)
	}
	if k := PlanPrefix + p.Name; k != key {
		return "", fmt.Errorf("field name: the plan %q under %s", p.Name, key)
	}
	if err := CheckPlan(&p); err != nil {
		return "", err
	}
	st.Plans = append(st.Plans, p)
	return "", nil
}

func decodeSalt(_ string, raw json.RawMessage, _ Known, st *State) (string, error) {
	if err := json.Unmarshal(raw, &st.CanarySalt); err != nil {
		return "", fmt.Errorf("not a salt: %w", err)
	}
	return "", nil
}

// Skip is an entry Decode left out, or kept in part, and why.
type Skip struct {
	Key    string
	Reason string
	Bad    bool // malformed, not merely of a node the table lacks
}

func (s Skip) String() string { return s.Key + ": " + s.Reason }

// Decode is the state entries say, checked against the node table (nil:
// every node is known). Entries that do not hold are left out, pins that
// overlap an earlier one (by key) too, and each is in skipped: a bad entry
// never stops the others.
func Decode(entries map[string]json.RawMessage, known Known) (st *State, skipped []Skip) {
	st = &State{}
	seen := map[netip.Prefix]string{}
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		raw := entries[key]
		if raw == nil {
			continue
		}
		k, ok := KindOf(key)
		if !ok {
			skipped = append(skipped, Skip{Key: key, Reason: "no kind of state has this key", Bad: true})
			continue
		}
		pins := len(st.Pins)
		note, err := k.decode(key, raw, known, st)
		if err != nil {
			skipped = append(skipped, Skip{Key: key, Reason: err.Error(), Bad: true})
			continue
		}
		if len(st.Pins) > pins { // one more pin: none of its networks pinned before
			e, _ := st.Pins[pins].Entry(nil)
			for _, p := range e.Prefixes {
				if other, dup := seen[p]; dup {
					st.Pins = st.Pins[:pins]
					err = fmt.Errorf("%s is pinned by %s too", p, other)
					break
				}
			}
			if err != nil {
				skipped = append(skipped, Skip{Key: key, Reason: err.Error(), Bad: true})
				continue
			}
			for _, p := range e.Prefixes {
				seen[p] = key
			}
		}
		if note != "" {
			skipped = append(skipped, Skip{Key: key, Reason: note})
		}
	}
	return st, skipped
}

// Encode is st as entries by key; shared alone keeps the kinds the fleet
// shares.
func Encode(st *State, sharedOnly bool) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range Kinds {
		if sharedOnly && !k.Shared {
			continue
		}
		k.encode(st, func(key string, v any) { out[key], _ = json.Marshal(v) })
	}
	return out
}

// Change sets (Value non-nil) or deletes (nil) the entry of Key.
type Change struct {
	Key   string
	Value json.RawMessage
}

// Apply is entries with changes made, in a new map: every change or none
// (an error names the first one that does not hold).
func Apply(entries map[string]json.RawMessage, changes ...Change) (map[string]json.RawMessage, error) {
	out := maps.Clone(entries)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	for _, c := range changes {
		if _, ok := KindOf(c.Key); !ok {
			return nil, fmt.Errorf("%s: no kind of state has this key", c.Key)
		}
		if c.Value == nil || string(c.Value) == "null" {
			delete(out, c.Key)
			continue
		}
		if !json.Valid(c.Value) {
			return nil, fmt.Errorf("%s: not JSON", c.Key)
		}
		out[c.Key] = c.Value
	}
	return out, nil
}

// Touched are the keys of changes.
func Touched(changes []Change) []string {
	keys := make([]string, 0, len(changes))
	for _, c := range changes {
		keys = append(keys, c.Key)
	}
	return keys
}

// DrainsInput is the drains as the policy's inputs take them.
func (st *State) DrainsInput() map[string]policy.Drain {
	out := make(map[string]policy.Drain, len(st.Drains))
	for _, d := range st.Drains {
		out[d.Node] = policy.Drain{Drained: true, Since: d.Since.Time}
	}
	return out
}

// SetDrain is a change draining (or, drained false, undraining) node id
// since t.
func SetDrain(id string, drained bool, t time.Time) Change {
	if !drained {
		return Change{Key: DrainPrefix + id}
	}
	v, _ := json.Marshal(Drain{Node: id, Since: yamlfile.Time{Time: t.UTC().Round(0)}})
	return Change{Key: DrainPrefix + id, Value: v}
}
