package engine_test

import clog "github.com/coredns/coredns/plugin/pkg/log"

// The engine logs what the server would; the tests assert it otherwise.
func init() { clog.Discard() }
