package test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutineSlack allows for goroutines that come and go on their own
// between the two counts: a probe or an HTTP connection of the test's own
// targets caught mid-flight, the runtime's timers and net poller.
const goroutineSlack = 4

// TestRestartLeaksNoGoroutines restarts CoreDNS several times, as the reload
// plugin does, with probes running, and fails as many restarts: the
// goroutine count comes back.
func TestRestartLeaksNoGoroutines(t *testing.T) {
	logs := captureLog(t)
	hz, sh := newProbeTarget(t), newProbeTarget(t)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", probedNodes(hz.url(), sh.url()))
	corefile := gslbCorefile(t, nodes, "reload 1s")
	s := startServer(t, corefile)
	waitState(t, s, logs, "202.101.172.0/24", "192.0.2.10", "up")
	before := runtime.NumGoroutine()

	// gslb's setup runs, then cache's fails: the new instance is discarded
	// without OnShutdown, so whatever gslb started in setup would leak.
	broken := strings.Replace(corefile, "    gslb {", "    cache {\n        no_such_property\n    }\n    gslb {", 1)
	const restarts = 6
	for i := range restarts {
		mu.Lock()
		_, err := s.inst.Restart(input(broken))
		mu.Unlock()
		if err == nil {
			t.Fatalf("Restart with a broken Corefile succeeded")
		}
		// A fresh Corefile each time, as an operator's edit would be.
		s.restart(t, corefile+fmt.Sprintf("\n# restart %d\n", i))
		waitState(t, s, logs, "202.101.172.0/24", "192.0.2.10", "up")
	}

	var after int
	deadline := time.Now().Add(waitTimeout)
	for {
		after = runtime.NumGoroutine()
		if after <= before+goroutineSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	if after > before+goroutineSlack {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%d goroutines after %d restarts, %d before (slack %d):\n%s", after, restarts, before, goroutineSlack, buf[:n])
	}
	t.Logf("Goroutines: %d before, %d after %d restarts", before, after, restarts)
}
