package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"

	"unicode/utf8"

	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/plan"
	"github.com/gslbdns/gslb/runstate"

	"go.yaml.in/yaml/v3"
)

// State is what the admin API changed: it is written to the state file on
// every change and read back at startup and on a Corefile reload.
type State struct {
	// The entries, inline.
	runstate.State `yaml:",inline"`
	// PinLines, when it has one per pin, holds each pin's encoding
	// (PinLine): a save of many pins copies them, and encodes none.
	PinLines [][]byte `yaml:"-" json:"-"`
	// Origins is, in a fleet, where each shared key's last change came
	// from, deletions included: a change made while Redis was out of
	// reach keeps its time over a restart and wins when it is the later.
	// A file without them (an older one) seeds the fleet as the oldest.
	Origins map[string]KeyOrigin `yaml:"origins,omitempty" json:"origins,omitempty"`
}

// KeyOrigin is the member and time of a shared key's last change.
type KeyOrigin struct {
	Member  string        `yaml:"member" json:"member"`
	Time    yamlfile.Time `yaml:"time" json:"time"`
	Deleted bool          `yaml:"deleted,omitempty" json:"deleted,omitempty"`
}

// DrainEntry is a drained node; CanaryEntry a canary share the API set,
// or a rollback; AutopilotEntry where the canary's autopilot is. Package
// runstate declares them.
type (
	DrainEntry     = runstate.Drain
	CanaryEntry    = runstate.Canary
	AutopilotEntry = runstate.Autopilot
	AutopilotEvent = runstate.AutopilotEvent
)

// MaxAutopilotHistory bounds the history kept: the oldest events go first.
const MaxAutopilotHistory = runstate.MaxAutopilotHistory

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
	// The state is checked under the control plane's lock (roundTrip).
	doc, err := yamlfile.DecodeHeld(data, s)
	if err != nil {
		if errors.Is(err, yamlfile.ErrEmpty) {
			return &State{}, nil, nil
		}
		return nil, nil, err
	}
	lines := yamlfile.EntryLines(doc, "drains")
	seen := map[string]int{}
	drains := s.Drains[:0:0]
	for i, d := range s.Drains {
		at := yamlfile.Where("drains", lines, i)
		keep, err := runstate.CheckDrain(d, runstate.Known(known))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", at, err)
		}
		if l, dup := seen[d.Node]; dup {
			return nil, nil, fmt.Errorf("%s: field node: %s is drained already, at line %d", at, d.Node, l)
		}
		seen[d.Node] = yamlfile.LineAt(lines, i)
		if !keep {
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
		p, gone, keep, err := runstate.CheckPin(p, runstate.Known(known))
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", at, err)
		case !keep:
			dropped = append(dropped, fmt.Sprintf("%s: nodes %v are not in the node table: the pin is dropped", at, gone))
			continue
		case len(gone) > 0:
			dropped = append(dropped, fmt.Sprintf("%s: nodes %v are not in the node table: dropped from the pin", at, gone))
		}
		e, _ := p.Entry(nil)
		entries = append(entries, e)
		pins = append(pins, p)
	}
	s.Pins = pins
	if err := checkOverlap(entries); err != nil {
		return nil, nil, err
	}
	if c := s.Canary; c != nil {
		if err := runstate.CheckCanary(c); err != nil {
			return nil, nil, fmt.Errorf("canary: %w", err)
		}
	}
	if err := checkPlans(s.Plans, yamlfile.EntryLines(doc, "plans")); err != nil {
		return nil, nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(s.Origins)) {
		switch o := s.Origins[k]; {
		case o.Member == "":
			return nil, nil, fmt.Errorf("origins: %s: field member: missing", k)
		case o.Time.IsZero():
			return nil, nil, fmt.Errorf("origins: %s: field time: missing", k)
		}
	}
	return s, dropped, nil
}

// checkPlans checks the plans' names and fields; their nodes are checked
// when one is executed, against the node table of the time.
func checkPlans(plans []plan.Stored, lines []int) error {
	seen := map[string]int{}
	for i := range plans {
		at := yamlfile.Where("plans", lines, i)
		p := &plans[i]
		if err := runstate.CheckPlan(p); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if l, dup := seen[p.Name]; dup {
			return fmt.Errorf("%s: field name: plan %s is at line %d already", at, p.Name, l)
		}
		seen[p.Name] = yamlfile.LineAt(lines, i)
	}
	return nil
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

// Marshal is the state file's content. It is JSON, whose strings carry any
// text (newlines, leading blanks, '#', NUL) in a form YAML reads back as
// it was, one entry a line, so that an error names the entry's line. The
// entries of every kind but pins are read back before they are written,
// and each pin is when the API takes it (CheckPin).
func (s *State) Marshal() ([]byte, error) {
	rs := s.State
	rs.Pins = nil
	if err := roundTrip(&State{State: rs, Origins: s.Origins}); err != nil {
		return nil, err
	}
	return encode(s)
}

// encode writes s one entry a line.
func encode(s *State) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	sep := "\n"
	list := func(key string, n int, line func(i int) ([]byte, error)) error {
		if n == 0 {
			return nil
		}
		fmt.Fprintf(&b, "%s  %q: [\n", sep, key)
		for i := range n {
			l, err := line(i)
			if err != nil {
				return err
			}
			b.WriteString("    ")
			b.Write(l)
			if i < n-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  ]")
		sep = ",\n"
		return nil
	}
	if err := list("drains", len(s.Drains), func(i int) ([]byte, error) { return compact(&s.Drains[i]) }); err != nil {
		return nil, err
	}
	if err := list("pins", len(s.Pins), func(i int) ([]byte, error) {
		if len(s.PinLines) == len(s.Pins) {
			return s.PinLines[i], nil
		}
		return PinLine(&s.Pins[i])
	}); err != nil {
		return nil, err
	}
	if err := list("plans", len(s.Plans), func(i int) ([]byte, error) { return compact(&s.Plans[i]) }); err != nil {
		return nil, err
	}
	if s.Canary != nil {
		l, err := compact(s.Canary)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  \"canary\": %s", sep, l)
		sep = ",\n"
	}
	if s.CanarySalt != "" {
		l, err := compact(s.CanarySalt)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  \"canary_salt\": %s", sep, l)
		sep = ",\n"
	}
	if len(s.Origins) > 0 {
		fmt.Fprintf(&b, "%s  \"origins\": {\n", sep)
		keys := slices.Sorted(maps.Keys(s.Origins))
		for i, k := range keys {
			o := s.Origins[k]
			o.Time.Time = o.Time.UTC()
			kl, err := compact(k)
			if err != nil {
				return nil, err
			}
			l, err := compact(o)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "    %s: %s", kl, l)
			if i < len(keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  }")
		sep = ",\n"
	}
	if sep == "\n" {
		b.WriteString("}\n")
	} else {
		b.WriteString("\n}\n")
	}
	return b.Bytes(), nil
}

// compact is v's JSON on one line, escaped for YAML.
func compact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeYAML(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// PinLine is pin y's line in the state file.
func PinLine(y *overrides.EntryYAML) ([]byte, error) { return compact(y) }

// escapeYAML escapes, in JSON text, the characters YAML reads otherwise
// than JSON: those outside YAML's printable set, NEL (a line break to
// YAML) and the byte order mark. Outside strings JSON is ASCII, so only
// strings change.
func escapeYAML(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if yamlPrintable(r) {
			if out != nil {
				out = append(out, data[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(data)+16), data[:i]...)
		}
		out = fmt.Appendf(out, "\\u%04x", r)
		i += n
	}
	if out == nil {
		return data
	}
	return out
}

func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7e:
		return true
	case r == 0x85 || r == 0xfeff || r == utf8.RuneError:
		return false
	}
	return r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
}

// roundTrip reports an error unless s reads back from the state file as
// it is.
func roundTrip(s *State) error {
	data, err := encode(s)
	if err != nil {
		return err
	}
	back, _, err := parseState(data, nil)
	if err != nil {
		return fmt.Errorf("the state file cannot store it: %w", err)
	}
	again, err := encode(back)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, data) {
		return errors.New("the state file cannot store it exactly (text must be valid UTF-8)")
	}
	return nil
}

// CheckPin returns pin y's line in the state file, or an error unless it
// reads back from the file exactly as the API took it.
func CheckPin(y *overrides.EntryYAML) ([]byte, error) {
	for _, s := range []string{y.Note, y.CIDR} {
		if !utf8.ValidString(s) {
			return nil, errors.New("not valid UTF-8: the state file cannot store it")
		}
	}
	if l := y.Location; l != nil {
		for _, s := range []string{l.Country, l.Province, l.City, l.ISP} {
			if !utf8.ValidString(s) {
				return nil, errors.New("location: not valid UTF-8: the state file cannot store it")
			}
		}
	}
	if err := roundTrip(&State{State: runstate.State{Pins: []overrides.EntryYAML{*y}}}); err != nil {
		return nil, err
	}
	return PinLine(y)
}

// CheckPlan reports an error unless plan p reads back from the state file
// exactly as the API took it.
func CheckPlan(p *plan.Stored) error {
	for _, s := range append([]string{p.Note}, p.Unpin...) {
		if !utf8.ValidString(s) {
			return errors.New("not valid UTF-8: the state file cannot store it")
		}
	}
	return roundTrip(&State{State: runstate.State{Plans: []plan.Stored{*p}}})
}

// TooLarge is a 507: the change would make the state file larger than the
// size limit it is read back with (or, Fleet, the fleet's shared state
// larger than it stores), so it is not made.
type TooLarge struct {
	Size, Limit int64
	Fleet       bool
	Key         string // in the fleet, the entry over the entry limit; "": the whole state
}

func (e *TooLarge) Error() string {
	if e.Fleet && e.Key != "" {
		return fmt.Sprintf("the fleet's shared state: entry %s would be about %d bytes, over its limit of %d bytes: the change is not made; "+
			"shorten it", e.Key, e.Size, e.Limit)
	}
	if e.Fleet {
		return fmt.Sprintf("the fleet's shared state would be about %d bytes, over its limit of %d bytes: the change is not made; "+
			"remove pins", e.Size, e.Limit)
	}
	return fmt.Sprintf("the state file would be %d bytes, over the size limit of %d bytes (max_file_size): the change is not made; "+
		"remove pins or raise max_file_size", e.Size, e.Limit)
}

// Write replaces the state file atomically: a reader sees the old file
// or the new one, never a part. A state over limit bytes (the limit it is
// loaded with; DefaultMaxSize when limit <= 0) is not written: it would
// not load at the next start.
func (s *State) Write(path string, limit int64) error {
	data, err := s.Marshal()
	if err != nil {
		return err
	}
	if limit <= 0 {
		limit = yamlfile.DefaultMaxSize
	}
	if int64(len(data)) > limit {
		return &TooLarge{Size: int64(len(data)), Limit: limit}
	}
	// It holds the canary's salt: for the server's user only.
	return atomicfile.WriteBytesMode(path, 0o600, data)
}

// ReadSalt is the state file's canary_salt, read apart from its entries:
// a drain or pin that does not load does not lose the salt. ok is false
// when the file cannot be read or is not a YAML (or JSON) mapping; a
// missing file is ok, without a salt. Aliases are not followed.
func ReadSalt(path string, limit int64) (salt string, ok bool) {
	data, err := yamlfile.ReadFile(path, limit)
	if errors.Is(err, os.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return "", false
	}
	if len(root.Content) == 0 {
		return "", true // empty
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return "", false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Kind == yaml.ScalarNode && k.Value == "canary_salt" && v.Kind == yaml.ScalarNode {
			return v.Value, true
		}
	}
	return "", true
}
