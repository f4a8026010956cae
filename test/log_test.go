package test

import clog "github.com/coredns/coredns/plugin/pkg/log"

// Tests that read log lines set the output themselves (captureLog).
func init() { clog.Discard() }
