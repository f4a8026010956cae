package gslb

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	_ "github.com/gslbdns/gslb/cmd/coredns/stock" // the stock plugins, gslb in the order

	dnstap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
)

// benchChainsList are the stock plugins operators put before gslb, as
// Corefile lines; TAP is the dnstap receiver's socket.
var benchChainsList = []struct{ name, lines string }{
	{"bare", ""},
	{"errors", "errors\n"},
	// README's recommended block: prometheus serves from a block of its
	// own on the same port.
	{"recommended", "errors\n" + ownBlock + "metrics.invalid:0 {\nbind 127.0.0.1\nprometheus 127.0.0.1:0\n}\n"},
	{"prometheus", "prometheus 127.0.0.1:0\n"},
	{"prometheus_errors", "prometheus 127.0.0.1:0\nerrors\n"},
	{"log_denial_error", "log . {\nclass denial error\n}\n"},
	{"dnstap", "dnstap unix://TAP full\n"},
	{"all", "prometheus 127.0.0.1:0\nerrors\nlog . {\nclass denial error\n}\ndnstap unix://TAP full\n"},
}

// benchChains serves hit's query through a real CoreDNS server block of
// each chain before gslb, and the same block with hosts instead of gslb:
// chain/<plugins>/{gslb,hosts}. gslb_nx is a NXDOMAIN from gslb;
// gslb_message takes the message path.
func benchChains(b *testing.B) {
	for _, c := range benchChainsList {
		leaves := []string{"gslb", "gslb_nx", "hosts"}
		if c.name == "prometheus" {
			// gslb's replies as messages, as before the recorder let the
			// bytes through.
			leaves = append(leaves, "gslb_message")
		}
		for _, leaf := range leaves {
			b.Run("chain/"+c.name+"/"+leaf, func(b *testing.B) {
				if leaf == "gslb_message" {
					messageOnly.Store(true)
					defer messageOnly.Store(false)
				}
				lines, tap := c.lines, (*tapReceiver)(nil)
				if strings.Contains(lines, "TAP") {
					tap = newTapReceiver(b)
					lines = strings.ReplaceAll(lines, "TAP", tap.path)
				}
				s, ctx := startChain(b, lines, leaf)
				qname := "www.example.org"
				if leaf == "gslb_nx" {
					qname = "nothere.example.org"
				}
				benchServer(b, ctx, s, []*dns.Msg{query(qname, dns.TypeA, subnet("1.0.1.0/24"))})
				if tap != nil {
					tap.await(b)
				}
			})
		}
	}
}

// startChain starts CoreDNS with one server block on a loopback port:
// lines, then gslb (the fixture's, with hit's rrl) or hosts answering
// www.example.org. It returns the block's server and the context the
// server gives each query.
func startChain(b *testing.B, lines, leaf string) (*dnsserver.Server, context.Context) {
	dir := fixture(b, fixtureNodes)
	last := fmt.Sprintf(fixtureBlock, "rrl {\nanswers 1000000\ndenials 1000000\n}\n")
	if leaf == "hosts" {
		last = "hosts /dev/null example.org {\n192.0.2.1 www.example.org\n}"
	}
	lines, other, _ := strings.Cut(lines, ownBlock)
	corefile := "example.org:0 {\nbind 127.0.0.1\nroot " + dir + "\n" + lines + last + "\n}\n" + other
	inst := startCoreDNS(b, corefile)
	srvs := inst.Servers()
	if len(srvs) == 0 {
		b.Fatalf("CoreDNS started no server\n%s", corefile)
	}
	if len(srvs) != 1 {
		b.Fatalf("CoreDNS started %d servers, want the blocks on one port\n%s", len(srvs), corefile)
	}
	s := serverOf(srvs[0])
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, s)
	return s, context.WithValue(ctx, dnsserver.LoopKey{}, 0)
}

// ownBlock separates a chain's lines from a server block of their own.
const ownBlock = "\x00"

// chainMu serializes caddy.Start: caddy's controller state is global.
var chainMu sync.Mutex

// startCoreDNS starts CoreDNS from corefile, and stops it (shutdown
// callbacks first, as on a signal) when the test ends.
func startCoreDNS(t testing.TB, corefile string) *caddy.Instance {
	t.Helper()
	chainMu.Lock()
	caddy.Quiet, dnsserver.Quiet = true, true
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), Filepath: "Corefile", ServerTypeName: "dns"})
	chainMu.Unlock()
	if err != nil {
		t.Fatalf("Cannot start CoreDNS: %v\n%s", err, corefile)
	}
	t.Cleanup(func() {
		inst.ShutdownCallbacks()
		inst.Stop()
	})
	return inst
}

// serverOf is the server behind a listener of a started instance: caddy
// keeps it in an unexported field, and the benchmark calls its ServeDNS
// directly, as its listener does, without the sockets.
func serverOf(sl caddy.ServerListener) *dnsserver.Server {
	f := reflect.ValueOf(&sl).Elem().FieldByName("server")
	if !f.IsValid() {
		panic("caddy.ServerListener has no server field")
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*dnsserver.Server)
}

// tapReceiver is a dnstap receiver on a unix socket: golang-dnstap's
// frame stream reader (bidirectional, as CoreDNS writes), counting frames.
type tapReceiver struct {
	path   string
	frames atomic.Int64
}

func newTapReceiver(t testing.TB) *tapReceiver {
	t.Helper()
	dir, err := os.MkdirTemp("", "tap") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	r := &tapReceiver{path: filepath.Join(dir, "tap.sock")}
	ln, err := net.Listen("unix", r.path)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte, 1024)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			in, err := dnstap.NewFrameStreamInputTimeout(c, true, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				in.ReadInto(out)
			}()
		}
	}()
	go func() {
		for range out {
			r.frames.Add(1)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		close(out)
		os.RemoveAll(dir)
	})
	return r
}

// await waits, bounded, until the receiver has read a frame: the taps
// went to a real reader.
func (r *tapReceiver) await(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.frames.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("The dnstap receiver at %s read no frame", r.path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
