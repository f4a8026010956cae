package health

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
)

// A probe type is a kind: the spec keys it takes, how it checks them, and
// the prober it builds. Adding a type is a file with its kind and one
// entry in kinds.
type kind struct {
	// defaults copies into s the probe_defaults keys only this kind takes.
	defaults func(s *Spec, d Spec)
	// validate checks the keys this kind takes, and rejects the others'.
	validate func(s Spec) error
	// new builds the prober of a validated spec.
	new func(s Spec, roots *x509.CertPool) prober
}

var kinds = map[string]kind{
	TypeTCP:   tcpKind,
	TypeHTTP:  httpKind,
	TypeHTTPS: httpKind,
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
	load    float64
	hasLoad bool
}

// newProber builds the prober of a validated spec.
func newProber(s Spec, roots *x509.CertPool) prober {
	return kinds[s.Type].new(s, roots)
}

// fail classifies an I/O error: an error at or after the deadline is a
// timeout (the conn deadline may fire just before the context's).
func fail(ctx context.Context, err error, reason string) outcome {
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return outcome{reason: ReasonTimeout}
	}
	return outcome{reason: reason}
}
