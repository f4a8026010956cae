// Package testredis runs a real redis-server on a loopback port for tests.
package testredis

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startWait bounds how long a fresh redis-server may take to answer PING:
// generous, for a machine loaded by other builds.
const startWait = 30 * time.Second

// Server is one redis-server process bound to 127.0.0.1.
type Server struct {
	t        testing.TB
	bin      string
	dir      string
	port     int
	password string      // requirepass; "" for none
	extra    []string    // more redis-server arguments (cluster, replica)
	conf     string      // a config file to start from (a sentinel's); "" for none
	tls      *tls.Config // StartTLS's: how ping dials

	// CAFile is the PEM file of the CA that signed StartTLS's certificate.
	CAFile string

	mu   sync.Mutex
	proc *os.Process
	done chan struct{} // closed when proc has exited
}

// Start starts redis-server on a free 127.0.0.1 port without persistence and
// waits until it answers PING. The server is killed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartAuth(t, "")
}

// StartAuth is Start with a password required of clients (requirepass),
// unless password is "".
func StartAuth(t testing.TB, password string) *Server {
	t.Helper()
	return startWith(t, password, "", nil)
}

// serverBin is the redis-server binary.
func serverBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr != nil {
			t.Fatalf("redis-server not found: run `make test`, which installs it")
		}
		bin = "/usr/bin/redis-server"
	}
	return bin
}

// startWith starts a server from the config file conf ("": none) with the
// arguments extra gives for the port picked (nil: none).
func startWith(t testing.TB, password, conf string, extra func(port int) []string) *Server {
	t.Helper()
	s := &Server{t: t, bin: serverBin(t), dir: t.TempDir(), password: password, conf: conf}
	t.Cleanup(s.Stop)
	var lastErr error
	// The free port can be taken between probe and bind: try a few.
	for range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("Cannot find a free port: %v", err)
		}
		s.port = port
		if extra != nil {
			s.extra = extra(port)
		}
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("Cannot start redis-server: %v", lastErr)
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server; it is safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Kill()
	<-s.done
	s.proc = nil
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Running reports whether the server's process is alive (not Stopped).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// Restart stops the server and starts a fresh, empty one on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("Cannot restart redis-server on port %d: %v", s.port, err)
	}
}

// Pause freezes the process (SIGSTOP): connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume undoes Pause.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		s.t.Fatalf("Redis-server is not running")
	}
	if err := s.proc.Signal(sig); err != nil {
		s.t.Fatalf("Cannot send %v to redis-server: %v", sig, err)
	}
}

func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", "",
		"--loglevel", "warning",
	)
	args = append(args, s.extra...)
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %v", waitErr)
		default:
		}
		if ping(s.Addr(), s.password, s.tls) == nil {
			s.mu.Lock()
			s.proc, s.done = cmd.Process, done
			s.mu.Unlock()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("redis-server on %s did not answer PING within %v", s.Addr(), startWait)
}

func ping(addr, password string, tc *tls.Config) error {
	d := &net.Dialer{Timeout: 200 * time.Millisecond}
	var c net.Conn
	var err error
	if tc != nil {
		c, err = tls.DialWithDialer(d, "tcp", addr, tc)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	r := bufio.NewReader(c)
	if password != "" {
		if _, err := fmt.Fprintf(c, "AUTH %s\r\n", password); err != nil {
			return err
		}
		if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
			return fmt.Errorf("AUTH: %q %v", line, err)
		}
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("unexpected PING reply %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
