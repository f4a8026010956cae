package gslb

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/request"

	"github.com/miekg/dns"
)

// recordingConn is a connection's writer that keeps what it was given.
type recordingConn struct {
	connWriter
	bytes  []byte
	msgs   int
	remote net.Addr // nil: resolver's, over UDP
}

func (w *recordingConn) RemoteAddr() net.Addr {
	if w.remote != nil {
		return w.remote
	}
	return resolver
}

var tcpResolver = &net.TCPAddr{IP: net.IPv4(192, 0, 2, 53), Port: 53}

// Write returns what the DNS library's writer does: over TCP, the
// length prefix is counted.
func (w *recordingConn) Write(b []byte) (int, error) {
	w.bytes = append([]byte(nil), b...)
	if _, tcp := w.remote.(*net.TCPAddr); tcp {
		return len(b) + 2, nil
	}
	return len(b), nil
}

func (w *recordingConn) WriteMsg(m *dns.Msg) error {
	w.msgs++
	b, err := m.Pack()
	w.bytes = b
	return err
}

// wireNodes is the fixture's table with a record answered by a cname
// node.
var wireNodes = strings.Replace(fixtureNodes, "records:\n", `  - {id: edge, cname: edge.vendor-cdn.example., country: CN, province: ZJ}
records:
  - name: cdn.example.org
    nodes: [edge]
`, 1)

// TestWireMatchesMessage: behind the scrubbing writer and plugin hops, an answer is
// written as bytes, and they are the bytes the message path sends through
// the same writer; a writer another plugin wrapped gets the message, and
// the metadata is set either way.
func TestWireMatchesMessage(t *testing.T) {
	g := newFixtureGSLB(t, wireNodes, "answers 2\n")
	noEDNS := query("www.example.org", dns.TypeA, nil)
	plainEDNS := query("WwW.Example.ORG", dns.TypeA, nil)
	plainEDNS.SetEdns0(1400, true)
	small := query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))
	small.IsEdns0().SetUDPSize(100) // under 512: 512
	for name, m := range map[string]*dns.Msg{
		"hit":       query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		"case":      query("wWw.EXAMPLE.org", dns.TypeA, subnet("1.0.1.0/24")),
		"aaaa":      query("v6.example.org", dns.TypeAAAA, subnet("2400::/48")),
		"ecs20":     query("www.example.org", dns.TypeA, subnet("1.0.16.0/20")),
		"ecs0":      query("www.example.org", dns.TypeA, &dns.EDNS0_SUBNET{Family: 0}),
		"nxdomain":  query("nothere.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		"nodata":    query("www.example.org", dns.TypeMX, subnet("1.0.1.0/24")),
		"nov4":      query("v6.example.org", dns.TypeA, subnet("2400::/48")),
		"noedns":    noEDNS,
		"cname":     query("cdn.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		"cname6":    query("cdn.example.org", dns.TypeAAAA, nil),
		"plainedns": plainEDNS,
		"small":     small,
	} {
		t.Run(name, func(t *testing.T) {
			wire := &recordingConn{}
			ctx := metadata.ContextWithMetadata(context.Background())
			ctx = g.Metadata(ctx, request.Request{Req: m, W: wire})
			// Through a plugin's hop to gslb, as in a server block.
			plugin.NextOrFailure("metadata", g, ctx, request.NewScrubWriter(m.Copy(), wire), m.Copy())
			if wire.msgs != 0 || wire.bytes == nil {
				t.Fatalf("Expected the reply as bytes, got %d messages", wire.msgs)
			}
			if f := metadata.ValueFunc(ctx, "gslb/client"); f == nil || f() == "" {
				t.Errorf("Expected gslb/client set, got %v", f)
			}
			ref := &recordingConn{}
			rec := dnstest.NewRecorder(request.NewScrubWriter(m.Copy(), ref))
			g.ServeDNS(context.Background(), rec, m.Copy())
			if ref.msgs != 1 || rec.Msg == nil {
				t.Fatalf("Expected a wrapped writer to get the message, got %d", ref.msgs)
			}
			if strings.HasPrefix(name, "cname") {
				var got dns.Msg
				if err := got.Unpack(wire.bytes); err != nil || len(got.Answer) != 1 || got.Answer[0].Header().Rrtype != dns.TypeCNAME {
					t.Fatalf("Expected a CNAME answer, got %v (%v)", &got, err)
				}
			}
			if string(wire.bytes) != string(ref.bytes) {
				var a, b dns.Msg
				a.Unpack(wire.bytes)
				b.Unpack(ref.bytes)
				t.Errorf("Bytes differ:\n% x\n%v\nwant\n% x\n%v", wire.bytes, &a, ref.bytes, &b)
			}
		})
	}
}

// TestIsConn: the DNS library's own writers, over UDP and TCP, are known
// as the connection.
func TestIsConn(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		got := make(chan bool, 1)
		srv := &dns.Server{Addr: "127.0.0.1:0", Net: network, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			got <- isConn(w)
			m := new(dns.Msg)
			w.WriteMsg(m.SetReply(r))
		})}
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ListenAndServe()
		<-started
		addr := ""
		if network == "udp" {
			addr = srv.PacketConn.LocalAddr().String()
		} else {
			addr = srv.Listener.Addr().String()
		}
		c := &dns.Client{Net: network, Timeout: 2 * time.Second}
		if _, _, err := c.Exchange(query("www.example.org", dns.TypeA, nil), addr); err != nil {
			t.Fatal(err)
		}
		if !<-got {
			t.Errorf("%s: the server's writer is not known as the connection", network)
		}
		srv.Shutdown()
	}
	if isConn(&dnstest.Recorder{}) || isConn(&discard{}) {
		t.Error("Expected other writers not known as the connection")
	}
}

// TestWireBadName: a name the packer refuses takes the message path, and
// the buffer pool still serves the next replies.
func TestWireBadName(t *testing.T) {
	g := newFixtureGSLB(t, fixtureNodes, "")
	bad := query("www.example.org", dns.TypeA, nil)
	bad.Question[0].Name = "a..example.org."
	w := &recordingConn{}
	g.ServeDNS(context.Background(), request.NewScrubWriter(bad, w), bad)
	if w.msgs != 1 {
		t.Errorf("Expected the message path for a bad name, got %d messages", w.msgs)
	}
	for range 3 {
		m := query("www.example.org", dns.TypeA, subnet("1.0.1.0/24"))
		w := &recordingConn{}
		g.ServeDNS(context.Background(), request.NewScrubWriter(m, w), m)
		if w.msgs != 0 || w.bytes == nil {
			t.Fatalf("Expected the reply as bytes, got %d messages", w.msgs)
		}
	}
}

// notConn wraps the connection's writer so that it is not known as one:
// the reply takes the message path.
type notConn struct{ dns.ResponseWriter }

// TestWireMetricsRecorder: behind prometheus's recorder the reply is
// still bytes, and the recorder holds what the message path leaves in it:
// the rcode, the size and the plugin; over UDP and TCP.
func TestWireMetricsRecorder(t *testing.T) {
	g := newFixtureGSLB(t, wireNodes, "answers 2\n")
	plainEDNS := query("www.example.org", dns.TypeA, nil)
	plainEDNS.SetEdns0(1400, true)
	queries := map[string]*dns.Msg{
		"a":         query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		"nxdomain":  query("nothere.example.org", dns.TypeA, subnet("1.0.1.0/24")),
		"nodata":    query("www.example.org", dns.TypeMX, subnet("1.0.1.0/24")),
		"noedns":    query("www.example.org", dns.TypeA, nil),
		"noedns_nx": query("nothere.example.org", dns.TypeA, nil),
		"plainedns": plainEDNS,
		"cname":     query("cdn.example.org", dns.TypeA, subnet("1.0.1.0/24")),
	}
	for name, m := range queries {
		for _, tcp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tcp=%v", name, tcp), func(t *testing.T) {
				serve := func(conn dns.ResponseWriter) *metrics.Recorder {
					rec := metrics.NewRecorder(request.NewScrubWriter(m.Copy(), conn))
					// prometheus's hop to the next plugin, then errors' to gslb.
					next := plugin.HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
						return plugin.NextOrFailure("errors", g, ctx, w, r)
					})
					plugin.NextOrFailure("prometheus", namedHandler{"errors", next}, context.Background(), rec, m.Copy())
					return rec
				}
				wire, ref := &recordingConn{}, &recordingConn{}
				if tcp {
					wire.remote, ref.remote = tcpResolver, tcpResolver
				}
				got, want := serve(wire), serve(notConn{ref})
				if wire.msgs != 0 || wire.bytes == nil || ref.msgs != 1 {
					t.Fatalf("Expected bytes behind the recorder and a message behind the other writer, got %d and %d messages", wire.msgs, ref.msgs)
				}
				if string(wire.bytes) != string(ref.bytes) {
					t.Errorf("Bytes differ:\n% x\nwant\n% x", wire.bytes, ref.bytes)
				}
				if got.Rcode != want.Rcode || got.Len != want.Len || got.Plugin != want.Plugin || got.Plugin == "" {
					t.Errorf("Recorder holds rcode %d, len %d, plugin %q; the message path's: %d, %d, %q",
						got.Rcode, got.Len, got.Plugin, want.Rcode, want.Len, want.Plugin)
				}
			})
		}
	}
}

// namedHandler is a handler under another plugin's name.
type namedHandler struct {
	name string
	plugin.Handler
}

func (h namedHandler) Name() string { return h.name }
