package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Spec is a node's `probe:` block in the node table, and the file's
// `probe_defaults:` block. Zero fields take the value of probe_defaults,
// then the built-in default.
type Spec struct {
	Type         string    `yaml:"type"`          // tcp | http | https
	Address      string    `yaml:"address"`       // tcp: host:port
	URL          string    `yaml:"url"`           // http/https
	Host         string    `yaml:"host"`          // Host header and SNI
	ExpectStatus []int     `yaml:"expect_status"` // default 200-399
	ExpectBody   string    `yaml:"expect_body"`   // substring of the body
	LoadField    string    `yaml:"load_field"`    // numeric JSON field 0..1
	Interval     Duration  `yaml:"interval"`      // default 5s
	Timeout      Duration  `yaml:"timeout"`       // default 2s, at most half the interval
	Rise         int       `yaml:"rise"`          // default 2
	Fall         int       `yaml:"fall"`          // default 3
	HoldDown     *Duration `yaml:"hold_down"`     // default 2m; 0s switches hold-down off
}

// Probe types.
const (
	TypeTCP   = "tcp"
	TypeHTTP  = "http"
	TypeHTTPS = "https"
)

// Built-in defaults.
const (
	DefaultInterval = 5 * time.Second
	DefaultTimeout  = 2 * time.Second
	DefaultRise     = 2
	DefaultFall     = 3
	DefaultHoldDown = 2 * time.Minute

	// A shorter interval would hammer the node; a shorter timeout can't
	// complete a TLS handshake.
	MinInterval = 100 * time.Millisecond
	MinTimeout  = 10 * time.Millisecond
)

// Duration is a time.Duration that YAML reads from strings such as "5s".
type Duration time.Duration

// UnmarshalYAML reads a Go duration string ("500ms", "2m").
func (d *Duration) UnmarshalYAML(value *yaml.Node) error {
	if value.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: duration must be a string such as \"5s\"", value.Line)
	}
	v, err := time.ParseDuration(value.Value)
	if err != nil {
		return fmt.Errorf("line %d: invalid duration %q, want e.g. \"5s\"", value.Line, value.Value)
	}
	*d = Duration(v)
	return nil
}

// String returns the duration in Go notation.
func (d Duration) String() string { return time.Duration(d).String() }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (s *Spec) holdDown() time.Duration {
	if s.HoldDown == nil {
		return DefaultHoldDown
	}
	return s.HoldDown.D()
}

// WithDefaults fills zero fields from d (probe_defaults), then from the
// built-in defaults. The type is the spec's own (given, or inferred from its
// URL or address), else the defaults' type, else tcp. Keys that only one
// kind of probe accepts (address for tcp; url, host, expect_status,
// expect_body and load_field for http and https) are taken from d only for
// a probe of that kind, so one probe_defaults serves tcp and http probes.
func (s Spec) WithDefaults(d Spec) Spec {
	if s.Type == "" {
		s.Type = inferType(s)
	}
	if s.Type == "" {
		s.Type = d.Type
	}
	if s.Type == "" {
		s.Type = inferType(d)
	}
	if s.Type == "" {
		s.Type = TypeTCP
	}
	if k, ok := kinds[s.Type]; ok {
		k.defaults(&s, d)
	}
	s.Interval = orDuration(s.Interval, d.Interval, DefaultInterval)
	// The built-in timeout must not conflict with a short interval the
	// operator set: it follows the interval down to half of it.
	s.Timeout = orDuration(s.Timeout, d.Timeout, min(DefaultTimeout, time.Duration(s.Interval)/2))
	if s.HoldDown == nil {
		s.HoldDown = d.HoldDown
	}
	if s.HoldDown == nil {
		h := Duration(DefaultHoldDown)
		s.HoldDown = &h
	}
	s.Rise = orInt(s.Rise, d.Rise, DefaultRise)
	s.Fall = orInt(s.Fall, d.Fall, DefaultFall)
	return s
}

func inferType(s Spec) string {
	switch {
	case s.URL != "":
		if strings.HasPrefix(strings.ToLower(s.URL), "https://") {
			return TypeHTTPS
		}
		return TypeHTTP
	case s.Address != "":
		return TypeTCP
	}
	return ""
}

func orDuration(v, d Duration, def time.Duration) Duration {
	if v != 0 {
		return v
	}
	if d != 0 {
		return d
	}
	return Duration(def)
}

func orInt(v, d, def int) int {
	if v != 0 {
		return v
	}
	if d != 0 {
		return d
	}
	return def
}

// ForNode returns s with a tcp probe's address defaulted to addr, the
// node's first address.
func (s Spec) ForNode(addr string) Spec {
	if s.Type == TypeTCP && s.Address == "" {
		s.Address = addr
	}
	return s
}

// Validate checks a merged spec; it changes nothing. Errors name the field,
// e.g. `probe.url: ...`.
func (s Spec) Validate() error {
	k, ok := kinds[s.Type]
	if !ok {
		return fmt.Errorf("probe.type: %q is not one of %s", s.Type, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	if err := k.check(s); err != nil {
		return err
	}
	if s.Interval < Duration(MinInterval) {
		return fmt.Errorf("probe.interval: %s is shorter than %s", s.Interval, MinInterval)
	}
	if s.Timeout < Duration(MinTimeout) || s.Timeout >= s.Interval {
		return fmt.Errorf("probe.timeout: %s must be at least %s and below the interval %s", s.Timeout, MinTimeout, s.Interval)
	}
	if s.Rise < 1 {
		return fmt.Errorf("probe.rise: %d must be >= 1", s.Rise)
	}
	if s.Fall < 1 {
		return fmt.Errorf("probe.fall: %d must be >= 1", s.Fall)
	}
	if s.HoldDown != nil && *s.HoldDown < 0 {
		return fmt.Errorf("probe.hold_down: %s must be >= 0", *s.HoldDown)
	}
	return nil
}
