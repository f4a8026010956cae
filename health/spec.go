package health

import "time"

// Spec is a node's `probe:` block in the node table, and the file's
// `probe_defaults:` block. Zero fields take the value of probe_defaults,
// then the built-in default.
type Spec struct {
	Type         string   `yaml:"type"`          // tcp | http | https
	Address      string   `yaml:"address"`       // tcp: host:port
	URL          string   `yaml:"url"`           // http/https
	Host         string   `yaml:"host"`          // Host header and SNI
	ExpectStatus []int    `yaml:"expect_status"` // default 200-399
	ExpectBody   string   `yaml:"expect_body"`   // substring of the body
	LoadField    string   `yaml:"load_field"`    // numeric JSON field 0..1
	Interval     Duration `yaml:"interval"`      // default 5s
	Timeout      Duration `yaml:"timeout"`       // default 2s
	Rise         int      `yaml:"rise"`          // default 2
	Fall         int      `yaml:"fall"`          // default 3
	HoldDown     Duration `yaml:"hold_down"`     // default 2m
}

// Duration is a time.Duration that YAML reads from strings such as "5s".
type Duration time.Duration
