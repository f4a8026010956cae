package main

import (
	"bytes"
	golog "log"
	"slices"
	"strings"

	"github.com/coredns/coredns/core/dnsserver"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/config"
)

// warnings collects the Warnings a start logs, from the code the start
// runs: every plugin's setup, the gslb block's load and its startup
// checks. gslb check prints them, so that they cannot drift from the
// server's.
type warnings struct {
	buf  bytes.Buffer
	list []string
}

// capture sends the log to w until done; done keeps its Warnings, those
// of plugin/gslb only when gslb is true.
func (w *warnings) capture() (done func(gslb bool)) {
	w.buf.Reset()
	golog.SetOutput(&w.buf)
	return func(gslb bool) {
		clog.Discard()
		const tag = "[WARNING] "
		for line := range strings.Lines(w.buf.String()) {
			i := strings.Index(line, tag)
			if i < 0 {
				continue
			}
			msg := strings.TrimSpace(line[i+len(tag):])
			if !gslb && strings.HasPrefix(msg, "plugin/"+config.Name+":") {
				continue
			}
			if !slices.Contains(w.list, msg) {
				w.list = append(w.list, msg)
			}
		}
	}
}

// startupWarnings logs what the server's OnStartup checks of the
// validated gslb blocks would.
func startupWarnings() {
	for _, cfg := range blocks {
		config.WarnMetadata(cfg)
	}
}

// blocks are the server configs of the gslb blocks validate built.
var blocks []*dnsserver.Config
