// Package testunbound runs a real validating unbound on loopback for the
// tests, with a zone's trust anchors and a stub to the server under test.
package testunbound

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// Start runs unbound until the test ends, validating zone with the DS
// records as its trust anchors and asking stub (host:port) for it, and
// returns its address.
func Start(t testing.TB, zone string, ds []*dns.DS, stub string) string {
	t.Helper()
	return StartFrom(t, zone, ds, stub, "")
}

// StartFrom is Start with unbound's queries to stub sent from the loopback
// address from (127.0.0.2, say), so that the server sees another client;
// "" is the default.
func StartFrom(t testing.TB, zone string, ds []*dns.DS, stub, from string) string {
	t.Helper()
	bin, err := exec.LookPath("unbound")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/unbound"); serr != nil {
			t.Fatalf("unbound not found: run `make test`, which installs it")
		}
		bin = "/usr/sbin/unbound"
	}
	host, port, _ := net.SplitHostPort(stub)
	var anchors strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&anchors, "  trust-anchor: \"%s\"\n", strings.ReplaceAll(d.String(), "\t", " "))
	}
	// The free port can be taken between probe and bind: try a few.
	for range 3 {
		if addr, ok := start(t, bin, freePort(t), anchors.String(), zone, host, port, from); ok {
			return addr
		}
	}
	t.Fatalf("Cannot start unbound")
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// start runs unbound on port, and says whether it answers.
func start(t testing.TB, bin string, listen int, anchors, zone, host, port, from string) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	if from != "" {
		anchors += fmt.Sprintf("  outgoing-interface: %s\n", from)
	}
	// "test." is one of unbound's default local zones: the tests' zones
	// under it must be looked up.
	conf := fmt.Sprintf(`server:
  interface: 127.0.0.1
  port: %d
  do-ip6: no
  username: ""
  chroot: ""
  directory: %q
  pidfile: %q
  use-syslog: no
  logfile: ""
  do-daemonize: no
  verbosity: 1
  val-log-level: 2
  num-threads: 1
  do-not-query-localhost: no
  module-config: "validator iterator"
  qname-minimisation: no
  local-zone: "test." nodefault
%sstub-zone:
  name: %q
  stub-addr: %s@%s
remote-control:
  control-enable: no
`, listen, dir, filepath.Join(dir, "unbound.pid"), anchors, zone, host, port)
	cf := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &testsupport.LogBuffer{}
	cmd := exec.Command(bin, "-d", "-c", cf)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("unbound said:\n%s", out.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", listen)
	up := false
	testsupport.WaitFor(t, "unbound to answer or exit", func() (bool, string) {
		select {
		case <-exited:
			return true, ""
		default:
		}
		m := new(dns.Msg)
		m.SetQuestion("version.bind.", dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		if _, _, err := new(dns.Client).Exchange(m, addr); err != nil {
			return false, err.Error() + "; " + out.String()
		}
		up = true
		return true, ""
	})
	if !up {
		t.Logf("unbound exited: %s", out.String())
	}
	return addr, up
}
