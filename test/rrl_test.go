package test

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// rrlCorefile is the demo signed with a new key, with the rrl defaults but
// for loopback, which they exempt: the tests' clients are loopback
// aliases standing for remote ones.
func rrlCorefile(t *testing.T, rrl string) (string, *dns.DNSKEY) {
	t.Helper()
	base, key := writeZoneKey(t, t.TempDir(), "example.org.", 257)
	return demoCorefile(t, "dnssec "+base+"\n        rrl {\n            exempt none\n"+rrl+"        }"), key
}

// udpFrom is a UDP socket bound to the loopback address from.
func udpFrom(t *testing.T, from string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)})
	if err != nil {
		t.Fatalf("Cannot bind %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// packed is m's wire form.
func packed(t *testing.T, m *dns.Msg) []byte {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A spoofed-source flood of DNSKEY and ANY with DO from one /24 (loopback
// aliases, as many sources as a spoofer would use) gets, once the
// accounts' second of burst is spent, at most one byte out per byte in:
// mostly nothing, every second limited response a TC reply no larger
// than the query. A client of another /24 is answered during the flood,
// and a slipped client's retry over TCP gets the answer.
func TestRRLReflection(t *testing.T) {
	corefile, _ := rrlCorefile(t, "")
	srv := startServer(t, corefile)
	dst, err := net.ResolveUDPAddr("udp", srv.udp)
	if err != nil {
		t.Fatal(err)
	}
	var queries [][]byte
	for _, qt := range []uint16{dns.TypeDNSKEY, dns.TypeANY} {
		m := new(dns.Msg)
		m.SetQuestion("example.org.", qt)
		m.SetEdns0(4096, true)
		queries = append(queries, packed(t, m))
	}

	const (
		sources  = 32
		perTick  = 2 // per source every 5ms: 12,800 queries a second in all
		tick     = 5 * time.Millisecond
		duration = 4 * time.Second
		settle   = 1500 * time.Millisecond // the burst, and a margin
	)
	var (
		start             = time.Now()
		inAfter, outAfter atomic.Int64 // bytes after settle
		sent, received    atomic.Int64
		slipped           atomic.Int64
		tcMsg             atomic.Pointer[dns.Msg]
		wg                sync.WaitGroup
	)
	for i := range sources {
		c := udpFrom(t, fmt.Sprintf("127.0.77.%d", i+1))
		wg.Add(1)
		go func() { // the replies the victim gets
			defer wg.Done()
			buf := make([]byte, 65535)
			for {
				c.SetReadDeadline(time.Now().Add(duration + 2*time.Second - time.Since(start)))
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				received.Add(1)
				if time.Since(start) > settle {
					outAfter.Add(int64(n))
				}
				r := new(dns.Msg)
				if r.Unpack(buf[:n]) == nil && r.Truncated {
					slipped.Add(1)
					tcMsg.CompareAndSwap(nil, r)
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; time.Since(start) < duration; k++ {
				for j := range perTick {
					q := queries[(k+j)%len(queries)]
					if _, err := c.WriteToUDP(q, dst); err != nil {
						continue
					}
					sent.Add(1)
					if time.Since(start) > settle {
						inAfter.Add(int64(len(q)))
					}
				}
				time.Sleep(tick)
			}
		}()
	}

	// Another /24 asks during the flood, as a client does: a few names,
	// each at a few queries a second.
	cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP("127.0.78.1")}}}
	names := []string{"www.example.org.", "api.example.org.", "example.org.", "nothere.example.org."}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeDNSKEY, dns.TypeSOA}
	asked, answered := 0, 0
	for i := 0; time.Since(start) < duration; i++ {
		m := new(dns.Msg)
		m.SetQuestion(names[i%len(names)], types[(i/len(names))%len(types)])
		m.SetEdns0(1232, true)
		asked++
		// Up to three tries, as a stub resolver makes: a loaded machine
		// may lose a datagram; the limit would send TC or nothing, again.
		for range 3 {
			r, _, err := cl.Exchange(m, srv.udp)
			if err != nil {
				continue
			}
			if r.Truncated {
				t.Errorf("The other /24 was slipped:\n%s", r)
			} else {
				answered++
			}
			break
		}
		time.Sleep(40 * time.Millisecond)
	}
	wg.Wait()

	in, out := inAfter.Load(), outAfter.Load()
	t.Logf("Flood: %d queries sent, %d replies (%d slipped); after %s: %d bytes in, %d out (%.2f); other /24: %d of %d answered",
		sent.Load(), received.Load(), slipped.Load(), settle, in, out, float64(out)/float64(in), answered, asked)
	if sent.Load() < 2000 {
		t.Fatalf("The flood sent %d queries only: not a flood", sent.Load())
	}
	if out > in {
		t.Errorf("Flood: %d bytes out for %d in after the burst, want at most one for one", out, in)
	}
	if float64(answered) < 0.99*float64(asked) {
		t.Errorf("Other /24: %d of %d answered, want 99%%", answered, asked)
	}
	m := tcMsg.Load()
	if m == nil {
		t.Fatal("No slipped (TC) reply during the flood")
	}
	if len(m.Answer) != 0 || len(m.Ns) != 0 || len(m.Question) != 1 {
		t.Errorf("Slipped reply: want the question alone:\n%s", m)
	}
	// The retry over TCP gets the answer, however the flood goes on.
	q := new(dns.Msg)
	q.SetQuestion(m.Question[0].Name, m.Question[0].Qtype)
	q.SetEdns0(4096, true)
	r := exchange(t, "tcp", srv.tcp, q)
	if r.Truncated || r.Rcode != dns.RcodeSuccess || len(r.Answer)+len(r.Ns) == 0 {
		t.Errorf("TCP retry: want the answer:\n%s", r)
	}
	if n := sumSeries(t, "coredns_gslb_rrl_limited_total", map[string]string{"action": "slip"}); n == 0 {
		t.Errorf("coredns_gslb_rrl_limited_total{action=\"slip\"} is 0")
	}
	if n := sumSeries(t, "coredns_gslb_rrl_limited_total", map[string]string{"action": "drop", "kind": "denial"}); n == 0 {
		t.Errorf("coredns_gslb_rrl_limited_total{action=\"drop\",kind=\"denial\"} is 0")
	}
}

// A large resolver is never limited with the defaults: asking www for
// 10,000 client subnets (ECS /24s) at 5,000 queries a second from one
// address, then 1,000 names without ECS at the same rate.
func TestRRLResolverNotLimited(t *testing.T) {
	dir := t.TempDir()
	table := "nodes:\n  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}\n  - {id: us-west, ipv4: [198.51.100.10], country: US, lat: 37.34, lon: -121.89}\nrecords:\n  - name: www.example.org\n"
	for i := range 1000 {
		table += fmt.Sprintf("  - name: n%d.example.org\n", i)
	}
	nodes := writeFile(t, dir, "nodes.yaml", table)
	srv := startServer(t, gslbCorefile(t, nodes, "rrl {\n            exempt none\n        }"))
	dst, err := net.ResolveUDPAddr("udp", srv.udp)
	if err != nil {
		t.Fatal(err)
	}
	before := sumSeries(t, "coredns_gslb_rrl_limited_total", nil)

	run := func(t *testing.T, from string, queries [][]byte) {
		t.Helper()
		c := udpFrom(t, from)
		c.SetReadBuffer(4 << 20)
		var got, tc atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 4096)
			for {
				c.SetReadDeadline(time.Now().Add(3 * time.Second))
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				got.Add(1)
				if n > 2 && buf[2]&0x02 != 0 {
					tc.Add(1)
				}
			}
		}()
		// 5,000 a second: 50 every 10ms, as the clock allows.
		start := time.Now()
		for i, q := range queries {
			if i%50 == 0 {
				if wait := time.Duration(i) * time.Second / 5000; time.Since(start) < wait {
					time.Sleep(wait - time.Since(start))
				}
			}
			c.WriteToUDP(q, dst)
		}
		el := time.Since(start)
		<-done
		t.Logf("%d queries sent in %s (%.0f a second), %d replies, %d truncated", len(queries), el.Round(time.Millisecond), float64(len(queries))/el.Seconds(), got.Load(), tc.Load())
		if tc.Load() != 0 {
			t.Errorf("%d replies truncated (slipped)", tc.Load())
		}
		// What is lost here is lost to a loaded machine: the limit's
		// verdict is the counter, checked below.
		if float64(got.Load()) < 0.2*float64(len(queries)) {
			t.Errorf("%d of %d answered", got.Load(), len(queries))
		}
	}
	t.Run("ECS", func(t *testing.T) {
		var qs [][]byte
		for i := range 10000 {
			m := newQuery(t, "www.example.org", dns.TypeA, fmt.Sprintf("%d.%d.%d.0/24", 1+i%200, (i/200)%250, i%251))
			m.Id = uint16(i)
			qs = append(qs, packed(t, m))
		}
		run(t, "127.0.79.1", qs)
	})
	t.Run("names", func(t *testing.T) {
		var qs [][]byte
		for i := range 10000 {
			m := newQuery(t, fmt.Sprintf("n%d.example.org", i%1000), []uint16{dns.TypeA, dns.TypeAAAA}[i/1000%2], "")
			m.Id = uint16(i)
			qs = append(qs, packed(t, m))
		}
		run(t, "127.0.80.1", qs)
	})
	if after := sumSeries(t, "coredns_gslb_rrl_limited_total", nil); after != before {
		t.Errorf("coredns_gslb_rrl_limited_total went from %v to %v", before, after)
	}
}
