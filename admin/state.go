package admin

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

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
}

// DrainEntry is a drained node.
type DrainEntry struct {
	Node  string        `yaml:"node"`
	Since yamlfile.Time `yaml:"since"`
}

// CanaryEntry is a canary share the API set. It holds only while the
// Corefile's canary line still names File with Percent.
type CanaryEntry struct {
	File     string  `yaml:"file"`
	Corefile float64 `yaml:"corefile_percent"` // the line's PERCENT when the API set it
	Percent  float64 `yaml:"percent"`
}

// LoadState reads a state file; a missing file is an empty state (the
// first start). Errors name the file, the line, the entry and the field.
// known reports whether a node id exists.
func LoadState(path string, known func(id string) bool) (*State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("admin state: %w", err)
	}
	s, err := parseState(data, known)
	if err != nil {
		return nil, fmt.Errorf("admin state %s: %w", path, err)
	}
	return s, nil
}

func parseState(data []byte, known func(id string) bool) (*State, error) {
	var s State
	doc, err := yamlfile.Decode(data, &s, map[string]string{"admin.DrainEntry": "drains", "overrides.EntryYAML": "pins"})
	if err != nil {
		if err.Error() == "empty file" {
			return &State{}, nil
		}
		return nil, err
	}
	lines := yamlfile.EntryLines(doc, "drains")
	seen := map[string]int{}
	for i, d := range s.Drains {
		at := yamlfile.Where("drains", lines, i)
		switch {
		case d.Node == "":
			return nil, fmt.Errorf("%s: field node: missing", at)
		case known != nil && !known(d.Node):
			return nil, fmt.Errorf("%s: field node: unknown node %q", at, d.Node)
		case d.Since.IsZero():
			return nil, fmt.Errorf("%s: field since: missing", at)
		}
		if l, dup := seen[d.Node]; dup {
			return nil, fmt.Errorf("%s: field node: %s is drained already, at line %d", at, d.Node, l)
		}
		seen[d.Node] = yamlfile.LineAt(lines, i)
	}
	lines = yamlfile.EntryLines(doc, "pins")
	var entries []overrides.Entry
	for i := range s.Pins {
		e, err := s.Pins[i].Entry(known)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", yamlfile.Where("pins", lines, i), err)
		}
		entries = append(entries, e)
	}
	if err := checkOverlap(entries); err != nil {
		return nil, err
	}
	if c := s.Canary; c != nil && (c.Percent < 0 || c.Percent > 100) {
		return nil, fmt.Errorf("canary: field percent: %g is outside 0..100", c.Percent)
	}
	return &s, nil
}

// checkOverlap rejects two pins of the same network.
func checkOverlap(entries []overrides.Entry) error {
	var seen []string
	for _, e := range entries {
		for _, p := range e.Prefixes {
			if slices.Contains(seen, p.String()) {
				return fmt.Errorf("pins: %s is pinned twice", p)
			}
			seen = append(seen, p.String())
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
