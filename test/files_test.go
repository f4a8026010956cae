package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

const (
	filesZJ           = "202.101.172.0/24"
	filesHZ, filesBJ  = "192.0.2.1", "198.51.100.10"
	filesQualityValid = "quality: []\n"
)

func filesPin(node string) string {
	return fmt.Sprintf("overrides:\n  - {cidr: %s, nodes: [%s]}\n", filesZJ, node)
}

// startFails starts CoreDNS from corefile and returns the startup error.
func startFails(t *testing.T, corefile string) error {
	t.Helper()
	mu.Lock()
	inst, err := caddy.Start(input(corefile))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
		t.Fatalf("Started with a bad file:\n%s", corefile)
	}
	return err
}

// TestAliasBombRejected: the alias bomb in the quality file is
// rejected on reload at its line, an overrides change made meanwhile is
// loaded, a Corefile reload fails fast while the running instance keeps
// serving, and the server shuts down promptly; at startup the bomb in the
// overrides, quality or candidate file is an error naming the file and
// the line, and in the state file a logged error: the server starts without it.
func TestAliasBombRejected(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", reloadNodes(filesHZ, ""))
	bomb := testsupport.AliasBomb("    ")
	for _, tc := range []struct{ name, extra, data string }{
		{"overrides.yaml", "overrides %s", "overrides:\n  - cidr: 1.0.1.0/24\n    nodes: [&k bogus]\n" + bomb},
		{"quality.yaml", "quality %s", "quality:\n  - node: &k bogus\n" + bomb},
		{"candidate.yaml", "canary %s 10", reloadNodes(filesHZ, "") + "nameservers: [&k bogus]\n" + testsupport.AliasBomb("")},
	} {
		p := writeFile(t, dir, "bad-"+tc.name, tc.data)
		err := startFails(t, gslbCorefile(t, nodes, fmt.Sprintf(tc.extra, p)))
		if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "an alias (*k) is not allowed") {
			t.Errorf("%s: startup error %q does not name the file and the alias", tc.name, err)
		}
	}

	// A state file never stops the start: the server serves without it
	// and logs the file and the line.
	st := writeFile(t, dir, "bad-state.yaml", "drains:\n  - node: &k bogus\n"+bomb)
	startServer(t, gslbCorefile(t, nodes, fmt.Sprintf("admin 127.0.0.1:0 {\n state %s\n}", st)))
	logs.line(t, st+": line 3: an alias (*k) is not allowed")

	ov := writeFile(t, dir, "overrides.yaml", filesPin("hz-telecom"))
	q := writeFile(t, dir, "quality.yaml", filesQualityValid)
	cf := gslbCorefile(t, nodes, fmt.Sprintf("overrides %s\nquality %s\nreload 1s", ov, q))
	s := startServer(t, cf)
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ)); got != filesHZ {
		t.Fatalf("Expected the pinned %s, got %q", filesHZ, got)
	}
	writeFile(t, dir, "quality.yaml", "quality:\n  - node: &k bogus\n"+bomb)
	writeFile(t, dir, "overrides.yaml", filesPin("bj-unicom"))
	logs.line(t, "quality "+q+": line 3: an alias (*k) is not allowed")
	waitFor(t, "the overrides change", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ))
		return got == filesBJ, got
	})

	// A Corefile reload (SIGUSR1) meanwhile fails fast, naming the file,
	// and the running instance keeps serving.
	mu.Lock()
	inst, err := s.inst.Restart(input(cf))
	mu.Unlock()
	if err == nil {
		s.inst = inst
		t.Fatalf("A Corefile reload with the alias bomb in %s succeeded", q)
	}
	if !strings.Contains(err.Error(), q+": line 3: an alias (*k) is not allowed") {
		t.Errorf("Corefile reload error %q does not name the file and the alias", err)
	}
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ)); got != filesBJ {
		t.Fatalf("After the failed Corefile reload: answer %q, want %s", got, filesBJ)
	}

	stopped := make(chan struct{})
	go func() { s.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(testsupport.WaitTimeout):
		t.Fatalf("The server did not stop within %v", testsupport.WaitTimeout)
	}
}

// TestOversizeFileRejected: a file over max_file_size fails startup naming
// the file, its size and the limit; on reload it is rejected and the
// previous overrides keep serving, and a later good file is loaded.
func TestOversizeFileRejected(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", reloadNodes(filesHZ, ""))
	big := filesPin("hz-telecom") + "# " + strings.Repeat("x", 1100) + "\n"
	ov := writeFile(t, dir, "overrides.yaml", big)
	want := fmt.Sprintf("%s: %d bytes, over the size limit of 1024 bytes (max_file_size)", ov, len(big))
	if err := startFails(t, gslbCorefile(t, nodes, "overrides "+ov+"\nmax_file_size 1KiB")); !strings.Contains(err.Error(), want) {
		t.Errorf("Startup error %q does not say %q", err, want)
	}

	writeFile(t, dir, "overrides.yaml", filesPin("bj-unicom"))
	s := startServer(t, gslbCorefile(t, nodes, "overrides "+ov+"\nmax_file_size 1KiB\nreload 1s"))
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ)); got != filesBJ {
		t.Fatalf("Expected the pinned %s, got %q", filesBJ, got)
	}
	writeFile(t, dir, "overrides.yaml", big)
	logs.line(t, "Rejected reload, keeping the previous version: "+want)
	if got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ)); got != filesBJ {
		t.Fatalf("After the oversize file: answer %q, want %s from the previous overrides", got, filesBJ)
	}
	writeFile(t, dir, "overrides.yaml", filesPin("hz-telecom"))
	waitFor(t, "the good overrides", func() (bool, string) {
		got := answerOf(ask(t, s, "www.example.org", dns.TypeA, filesZJ))
		return got == filesHZ, got
	})
}

// TestProbeDefaultsBlame: a probe value that came from probe_defaults is
// blamed on probe_defaults' line, not on the node's probe line.
func TestProbeDefaultsBlame(t *testing.T) {
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", `nodes:
  - id: hz
    ipv4: [192.0.2.1]
    country: CN
    province: ZJ
    lat: 30.27
    lon: 120.16
    probe:
      address: 192.0.2.1:80
records:
  - name: www.example.org
probe_defaults: {interval: 1s, timeout: 2s}
`)
	mu.Lock()
	inst, err := caddy.Start(input(gslbCorefile(t, nodes, "")))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
	}
	want := nodes + ": line 12: probe_defaults.timeout, in the probe of nodes[0] (id hz): 2s must be at least"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Expected %q, got %v", want, err)
	}
}
