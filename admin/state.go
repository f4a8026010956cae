package admin

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
)

// State is what the admin API changed: it is written to the state file on
// every change and read back at startup and on a Corefile reload.
type State struct {
	Drains []DrainEntry          `yaml:"drains,omitempty"`
	Pins   []overrides.EntryYAML `yaml:"pins,omitempty"`
	Canary *CanaryEntry          `yaml:"canary,omitempty"`
	// CanarySalt keys the canary's choice of subnets when the Corefile
	// sets no salt: generated at the first start, then kept.
	CanarySalt string `yaml:"canary_salt,omitempty"`
}

// DrainEntry is a drained node.
type DrainEntry struct {
	Node  string        `yaml:"node"`
	Since yamlfile.Time `yaml:"since"`
}

// CanaryEntry is a canary share the API set, or a rollback. It holds only
// while the canary line and the candidate file are those of Identity.
type CanaryEntry struct {
	Identity   string  `yaml:"identity"` // a digest of the canary line and the candidate file
	File       string  `yaml:"file"`     // for the reader
	Percent    float64 `yaml:"percent"`
	RolledBack bool    `yaml:"rolled_back,omitempty"`
	Reason     string  `yaml:"reason,omitempty"`
}

// LoadState reads a state file; a missing file is an empty state (the
// first start); a file over limit bytes is refused. Errors name the file, the line, the entry and the field.
// known reports whether a node id exists: drains and pins of nodes the
// table no longer has are dropped, and logged.
func LoadState(path string, limit int64, known func(id string) bool) (*State, error) {
	data, err := yamlfile.ReadFile(path, limit)
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("admin state: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		log.Warningf("admin state %s is empty: starting without drains or pins", path)
	}
	defer yamlfile.Release(len(data))
	s, dropped, err := parseState(data, known)
	if err != nil {
		return nil, fmt.Errorf("admin state %s: %w", path, err)
	}
	for _, d := range dropped {
		log.Warningf("admin state %s: %s", path, d)
	}
	return s, nil
}

func parseState(data []byte, known func(id string) bool) (s *State, dropped []string, err error) {
	s = &State{}
	doc, err := yamlfile.Decode(data, s)
	if err != nil {
		if errors.Is(err, yamlfile.ErrEmpty) {
			return &State{}, nil, nil
		}
		return nil, nil, err
	}
	if known == nil {
		known = func(string) bool { return true }
	}
	lines := yamlfile.EntryLines(doc, "drains")
	seen := map[string]int{}
	drains := s.Drains[:0:0]
	for i, d := range s.Drains {
		at := yamlfile.Where("drains", lines, i)
		switch {
		case d.Node == "":
			return nil, nil, fmt.Errorf("%s: field node: missing", at)
		case d.Since.IsZero():
			return nil, nil, fmt.Errorf("%s: field since: missing", at)
		}
		if l, dup := seen[d.Node]; dup {
			return nil, nil, fmt.Errorf("%s: field node: %s is drained already, at line %d", at, d.Node, l)
		}
		seen[d.Node] = yamlfile.LineAt(lines, i)
		if !known(d.Node) {
			dropped = append(dropped, fmt.Sprintf("%s: node %s is not in the node table: its drain is dropped", at, d.Node))
			continue
		}
		drains = append(drains, d)
	}
	s.Drains = drains
	lines = yamlfile.EntryLines(doc, "pins")
	var entries []overrides.Entry
	pins := s.Pins[:0:0]
	for i, p := range s.Pins {
		at := yamlfile.Where("pins", lines, i)
		if _, err := p.Entry(nil); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", at, err)
		}
		kept := slices.DeleteFunc(slices.Clone(p.Nodes), func(id string) bool { return !known(id) })
		if len(kept) != len(p.Nodes) {
			gone := slices.DeleteFunc(slices.Clone(p.Nodes), known)
			if len(kept) == 0 && p.Location == nil {
				dropped = append(dropped, fmt.Sprintf("%s: nodes %v are not in the node table: the pin is dropped", at, gone))
				continue
			}
			dropped = append(dropped, fmt.Sprintf("%s: nodes %v are not in the node table: dropped from the pin", at, gone))
			p.Nodes = kept
			if len(kept) == 0 {
				p.Nodes = nil
			}
		}
		e, _ := p.Entry(nil)
		entries = append(entries, e)
		pins = append(pins, p)
	}
	s.Pins = pins
	if err := checkOverlap(entries); err != nil {
		return nil, nil, err
	}
	if c := s.Canary; c != nil && (c.Percent < 0 || c.Percent > 100) {
		return nil, nil, fmt.Errorf("canary: field percent: %g is outside 0..100", c.Percent)
	}
	return s, dropped, nil
}

// checkOverlap rejects two pins of the same network, naming the first
// network seen again; a set keeps it linear in the number of networks.
func checkOverlap(entries []overrides.Entry) error {
	seen := map[netip.Prefix]struct{}{}
	for _, e := range entries {
		for _, p := range e.Prefixes {
			if _, dup := seen[p]; dup {
				return fmt.Errorf("pins: %s is pinned twice", p)
			}
			seen[p] = struct{}{}
		}
	}
	return nil
}

// Write replaces the state file atomically: a reader sees the old file
// or the new one, never a part.
func (s *State) Write(path string) error {
	data, err := yaml.Marshal(s)
	if err != nil {
		return err
	}
	header := []byte("# gslb admin state: written by the admin API on every change; edit with care.\n")
	return atomicfile.WriteBytes(path, append(header, data...))
}

// Drained returns the drain times by node id.
func (s *State) Drained() map[string]time.Time {
	m := make(map[string]time.Time, len(s.Drains))
	for _, d := range s.Drains {
		m[d.Node] = d.Since.Time
	}
	return m
}
