package health

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// A probe type is a kind: the spec keys it takes, how it checks them, and
// the prober it builds. Adding a type is a file with its kind and one
// entry in kinds; a key of its own is one entry in kindKeys, and the
// Spec field that carries it.
type kind struct {
	// keys are the kindKeys this kind takes: probe_defaults fills them,
	// and a spec of any other kind that sets one is rejected.
	keys []string
	// ignores are kindKeys of other kinds this kind accepts and does not
	// use (a tcp probe's host and expect_status always were).
	ignores []string
	// validate checks the values of the keys this kind takes.
	validate func(s Spec) error
	// new builds the prober of a validated spec.
	new func(s Spec, roots *x509.CertPool) prober
}

var kinds = map[string]kind{
	TypeTCP:   tcpKind,
	TypeHTTP:  httpKind,
	TypeHTTPS: httpKind,
}

// kindKey is a spec key that only some kinds take.
type kindKey struct {
	name string
	set  func(s Spec) bool
	// fill copies the key from probe_defaults d into s, which lacks it.
	fill func(s *Spec, d Spec)
	// hint follows the rejection of the key by another kind.
	hint string
}

// kindKeys in the order they are checked.
var kindKeys = []kindKey{
	{name: "address", hint: ", use probe.url",
		set:  func(s Spec) bool { return s.Address != "" },
		fill: func(s *Spec, d Spec) { s.Address = d.Address }},
	{name: "url",
		set: func(s Spec) bool { return s.URL != "" },
		// An http probe takes an http URL, an https probe an https one.
		fill: func(s *Spec, d Spec) {
			if inferType(Spec{URL: d.URL}) == s.Type {
				s.URL = d.URL
			}
		}},
	{name: "load_field",
		set:  func(s Spec) bool { return s.LoadField != "" },
		fill: func(s *Spec, d Spec) { s.LoadField = d.LoadField }},
	{name: "expect_body",
		set:  func(s Spec) bool { return s.ExpectBody != "" },
		fill: func(s *Spec, d Spec) { s.ExpectBody = d.ExpectBody }},
	{name: "host",
		set:  func(s Spec) bool { return s.Host != "" },
		fill: func(s *Spec, d Spec) { s.Host = d.Host }},
	{name: "expect_status",
		set:  func(s Spec) bool { return len(s.ExpectStatus) != 0 },
		fill: func(s *Spec, d Spec) { s.ExpectStatus = d.ExpectStatus }},
}

// defaults fills from probe_defaults d the keys of k that s lacks.
func (k kind) defaults(s *Spec, d Spec) {
	for _, key := range kindKeys {
		if slices.Contains(k.keys, key.name) && !key.set(*s) {
			key.fill(s, d)
		}
	}
}

// check rejects the other kinds' keys, then validates k's own.
func (k kind) check(s Spec) error {
	for _, key := range kindKeys {
		if key.set(s) && !slices.Contains(k.keys, key.name) && !slices.Contains(k.ignores, key.name) {
			return fmt.Errorf("probe.%s: only for %s probes%s", key.name, takers(key.name), key.hint)
		}
	}
	return k.validate(s)
}

// takers names the kinds that take key, e.g. "http and https".
func takers(key string) string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		if slices.Contains(kinds[name].keys, key) {
			names = append(names, name)
		}
	}
	if n := len(names); n > 1 {
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return strings.Join(names, "")
}

// prober runs one target's probe. Each probe uses a fresh connection, so
// that the TCP layer is really tested.
type prober interface {
	// probe runs the checks within the spec's timeout; parent's
	// cancellation aborts it and the caller drops that result.
	probe(parent context.Context) outcome
}

// outcome is the result of one probe.
type outcome struct {
	ok      bool
	reason  string
	detail  string // the failure's text; "": the reason says it all
	load    float64
	hasLoad bool
}

// text is what a failure is logged and shown as.
func (o outcome) text() string {
	if o.detail != "" {
		return o.detail
	}
	return o.reason
}

// newProber builds the prober of a validated spec.
func newProber(s Spec, roots *x509.CertPool) prober {
	return kinds[s.Type].new(s, roots)
}

// sourced is a prober whose connections can leave from a given address.
type sourced interface{ setSource(netip.Addr) }

// prober builds the prober of a validated spec with o's roots and source.
func (o *Options) prober(s Spec) prober {
	p := newProber(s, o.RootCAs)
	if sp, ok := p.(sourced); ok && o.Source.IsValid() {
		sp.setSource(o.Source)
	}
	return p
}

func sourceAddr(a netip.Addr) *net.TCPAddr { return &net.TCPAddr{IP: a.AsSlice(), Zone: a.Zone()} }

// fail classifies an I/O error: an error at or after the deadline is a
// timeout (the conn deadline may fire just before the context's).
func fail(ctx context.Context, err error, reason string) outcome {
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return outcome{reason: ReasonTimeout}
	}
	// The system call's words ("connect: connection refused") without
	// the dial's addresses, which the log line names already.
	var se *os.SyscallError
	if errors.As(err, &se) {
		return outcome{reason: reason, detail: se.Error()}
	}
	return outcome{reason: reason, detail: err.Error()}
}
