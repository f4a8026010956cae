package control

import (
	"strings"
	"testing"

	"github.com/coredns/caddy/caddyfile"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newDispenser(block string) *caddyfile.Dispenser {
	d := caddyfile.NewDispenser("Testfile", strings.NewReader(block))
	return &d
}

// newTestControl loads a gslb block whose relative paths resolve in dir.
func newTestControl(t testing.TB, dir, block string) *Control {
	t.Helper()
	o, err := config.Parse(newDispenser(block), nil, dir, config.Unique{})
	if err != nil {
		t.Fatalf("Parse %q: %v", block, err)
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("Load %q: %v", block, err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// captureLog collects what the package logs until the test ends.
func captureLog(t *testing.T) *testsupport.LogBuffer {
	t.Helper()
	buf := &testsupport.LogBuffer{}
	clog.SetOutput(buf)
	t.Cleanup(clog.Discard)
	return buf
}

// fileOKOf is the file_ok series of path; ok is false when there is none.
func fileOKOf(t *testing.T, path string) (v float64, ok bool) {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { fileOK.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if pb.GetLabel()[0].GetValue() == path {
			v, ok = pb.GetGauge().GetValue(), true
		}
	}
	return v, ok
}
