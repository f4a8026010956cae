package health

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// A pool's gate holds the probes of the nodes it refuses: a fleet member
// without a node's lease does not probe it.
func TestPoolGate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	p := NewPool(Options{})
	var open atomic.Bool
	p.SetGate(func(id string) bool { return id == "n" && open.Load() })
	spec := Spec{Type: TypeTCP, Address: l.Addr().String(), Interval: Duration(100 * time.Millisecond), Timeout: Duration(50 * time.Millisecond)}
	c := p.NewChecker([]Target{{ID: "n", Spec: spec.WithDefaults(Spec{})}}, nil)
	c.Start()
	defer c.Stop()
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := conns.Load(); n != 0 {
			t.Fatalf("Expected no probe through a closed gate, got %d", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	open.Store(true)
	testsupport.WaitFor(t, "a probe once the gate opens", func() (bool, string) {
		return conns.Load() > 0, ""
	})
}
