package health

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// tcpKind checks that a TCP connection opens.
var tcpKind = kind{
	keys:    []string{"address"},
	ignores: []string{"host", "expect_status"},
	validate: func(s Spec) error {
		if s.Address == "" {
			return errors.New("probe.address: required for a tcp probe of a node without addresses")
		}
		host, port, err := net.SplitHostPort(s.Address)
		if err != nil || port == "" {
			return fmt.Errorf("probe.address: %q must be host:port (a port is required)", s.Address)
		}
		if host == "" {
			return fmt.Errorf("probe.address: %q has no host", s.Address)
		}
		return nil
	},
	new: func(s Spec, _ *x509.CertPool) prober { return &tcpProber{spec: s} },
}

type tcpProber struct {
	spec   Spec
	dialer net.Dialer
}

func (p *tcpProber) setSource(a netip.Addr) { p.dialer.LocalAddr = sourceAddr(a) }

func (p *tcpProber) probe(parent context.Context) outcome {
	ctx, cancel := context.WithTimeout(parent, p.spec.Timeout.D())
	defer cancel()
	conn, err := p.dialer.DialContext(ctx, "tcp", p.spec.Address)
	if err != nil {
		return fail(ctx, err, ReasonConnect)
	}
	conn.Close()
	return outcome{ok: true}
}
