package test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dnstap "github.com/dnstap/golang-dnstap"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"
)

// wireNodes reach every tier from the wireDBs' clients: carriers in
// Zhejiang, Shanghai, Beijing and Guangdong, one node abroad, a record
// whose nodes are all overloaded (fail-open), the same with a fallback,
// and a name long enough that two answers overflow 512 bytes.
var wireNodes = `nodes:
  - {id: hz-t, ipv4: [192.0.2.1], ipv6: ["2001:db8::1"], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: hz-u, ipv4: [192.0.2.2], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16}
  - {id: sh-t, ipv4: [192.0.2.3], ipv6: ["2001:db8::3"], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj-u, ipv4: [192.0.2.4], ipv6: ["2001:db8::4"], country: CN, province: BJ, isp: unicom, lat: 39.9, lon: 116.4}
  - {id: gz-m, ipv4: [192.0.2.5], country: CN, province: GD, isp: mobile, lat: 23.13, lon: 113.26}
  - {id: us, ipv4: [192.0.2.6], ipv6: ["2001:db8::6"], country: US, lat: 37.4, lon: -122.1}
  - {id: hot-a, ipv4: [198.51.100.1], country: CN, province: ZJ, lat: 30, lon: 120, load: 0.95}
  - {id: hot-b, ipv4: [198.51.100.2], country: CN, province: ZJ, lat: 30, lon: 120, load: 0.97}
records:
  - name: www.example.org
    nodes: [hz-t, hz-u, sh-t, bj-u, gz-m, us]
  - name: v6.example.org
    nodes: [hz-t, sh-t, bj-u, us]
  - name: hot.example.org
    nodes: [hot-a, hot-b]
  - name: gone.example.org
    nodes: [hot-a, hot-b]
    fallback: backup.cdn.example.net
  - name: ` + wireLong + `
    nodes: [hz-t, hz-u, sh-t, bj-u]
`

// wireLong is 255 octets on the wire: one answer overflows 512 bytes
// uncompressed, so the reply is compressed to fit (at most 8 answers of
// 16 bytes fit compressed: no address reply is truncated).
var wireLong = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 49) + ".example.org"

// wirePlaces are the clients' locations, one per /16 (IPv4) or /32
// (IPv6) in turn: provinces near and far from the nodes, China without a
// province, abroad, nowhere known.
var wirePlaces = []mmdbgen.City{
	{Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 20},
	{Country: "CN", Province: "SH", Lat: 31.23, Lon: 121.47, Radius: 20},
	{Country: "CN", Province: "JS", Lat: 32.06, Lon: 118.8, Radius: 20},
	{Country: "CN", Province: "SD", Lat: 36.67, Lon: 117, Radius: 20},
	{Country: "CN", Province: "GD", Lat: 23.13, Lon: 113.26, Radius: 20},
	{Country: "CN", Province: "BJ", Lat: 39.9, Lon: 116.4, Radius: 20},
	{Country: "CN", Province: "XJ", Lat: 43.8, Lon: 87.6, Radius: 50},
	{Country: "CN", Lat: 34.77, Lon: 113.72, Radius: 1000},
	{Country: "US", Lat: 40.7, Lon: -74, Radius: 50},
	{Country: "JP", Lat: 35.7, Lon: 139.7, Radius: 50},
	{Country: "DE", Lat: 52.5, Lon: 13.4, Radius: 50},
	{},
}

// wireASNs are the carriers (0: none) in turn, prime to the places.
var wireASNs = []uint32{4134, 4837, 9808, 0, 4134}

// wireDBs writes 64 IPv4 /16s and 16 IPv6 /32s over the places and the
// carriers.
func wireDBs(t *testing.T, dir string) (city, asn string) {
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	add := func(i int, network string) {
		c := wirePlaces[i%len(wirePlaces)]
		c.Network = network
		cities = append(cities, c)
		if a := wireASNs[i%len(wireASNs)]; a != 0 {
			asns = append(asns, mmdbgen.ASN{Network: network, ASN: a, Org: fmt.Sprint("AS", a)})
		}
	}
	for i := range 64 {
		add(i, fmt.Sprintf("1.%d.0.0/16", i))
	}
	for i := range 16 {
		add(i, fmt.Sprintf("2400:%x::/32", i))
	}
	return testsupport.WriteDBs(t, dir, cities, asns)
}

// tapReceiver reads CoreDNS's dnstap stream on a unix socket and keeps
// the response messages by query ID.
type tapReceiver struct {
	mu        sync.Mutex
	responses map[uint16][][]byte
	warm      chan struct{}
	once      sync.Once
}

func newTapReceiver(t *testing.T, sock string) *tapReceiver {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &tapReceiver{responses: map[uint16][][]byte{}, warm: make(chan struct{})}
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		in, err := dnstap.NewFrameStreamInputTimeout(conn, true, 5*time.Second)
		if err != nil {
			return
		}
		frames := make(chan []byte, 256)
		go func() {
			for f := range frames {
				var d dnstap.Dnstap
				if proto.Unmarshal(f, &d) != nil || d.Message == nil || d.Message.GetType() != dnstap.Message_CLIENT_RESPONSE {
					continue
				}
				raw := d.Message.ResponseMessage
				var m dns.Msg
				if m.Unpack(raw) != nil || len(m.Question) == 0 {
					continue
				}
				if strings.EqualFold(m.Question[0].Name, warmupName+".") {
					r.once.Do(func() { close(r.warm) })
					continue
				}
				r.mu.Lock()
				r.responses[m.Id] = append(r.responses[m.Id], raw)
				r.mu.Unlock()
			}
		}()
		in.ReadInto(frames)
		close(frames)
	}()
	return r
}

func (r *tapReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.responses {
		n += len(v)
	}
	return n
}

// rawReply sends the packed query q and returns the reply's bytes.
func rawReply(t *testing.T, network, addr string, q []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if network == "tcp" {
		q = append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)
	}
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	if network == "tcp" {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := make([]byte, 65535)
	n, err := c.Read(b)
	if err != nil {
		t.Fatalf("Read from %s: %v", addr, err)
	}
	return b[:n]
}

// wireQuery is the i-th query of TestWireAnswers: a subnet of its own,
// both families, every record and tier, NXDOMAIN and NODATA, ECS of
// several lengths or none, EDNS or none, a 512-byte limit that forces
// compression, mixed case, UDP and TCP.
func wireQuery(i int, rng *rand.Rand) (q *dns.Msg, network string) {
	v6 := i%5 == 4
	ecs := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24,
		Address: net.IPv4(1, byte(i%64), byte(i/64), 0).To4()}
	if v6 {
		a := net.ParseIP(fmt.Sprintf("2400:%x:%x::", i%16, i/16))
		ecs = &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: 48, Address: a}
	}
	switch i % 13 {
	case 0:
		ecs.SourceNetmask = 20
		if v6 {
			ecs.SourceNetmask = 32
		}
		ecs.Address = ecs.Address.Mask(net.CIDRMask(int(ecs.SourceNetmask), len(ecs.Address)*8))
	case 1:
		if !v6 {
			ecs.SourceNetmask, ecs.Address = 32, net.IPv4(1, byte(i%64), byte(i/64), byte(i)).To4()
		}
	case 2:
		ecs = &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET}
	}
	qtype := dns.TypeA
	if v6 {
		qtype = dns.TypeAAAA
	}
	name := []string{"www", "www", "www", "v6", "hot", "gone", wireLong[:len(wireLong)-len(".example.org")]}[i%7] + ".example.org."
	switch i % 11 {
	case 0:
		name = fmt.Sprintf("nothere-%d.example.org.", i)
	case 1:
		qtype = dns.TypeMX
	}
	if i%2 == 1 {
		b := []byte(name)
		for k := range b {
			if rng.IntN(2) == 0 {
				b[k] = bytes2upper(b[k])
			}
		}
		name = string(b)
	}
	q = new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.Id = uint16(i)
	q.RecursionDesired = i%3 != 0
	q.CheckingDisabled = i%29 == 0
	switch i % 6 {
	case 0: // no EDNS
	case 1:
		q.SetEdns0(1232, i%12 == 1)
	default:
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{ecs}}
		o.SetUDPSize(1232)
		if i%6 == 5 {
			o.SetUDPSize(512)
		}
		if i%24 == 2 {
			o.SetDo()
		}
		q.Extra = append(q.Extra, o)
	}
	network = "udp"
	if i%9 == 0 {
		network = "tcp"
	}
	return q, network
}

func bytes2upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// TestWireAnswers: the replies of a server block whose writer nothing
// wraps (gslb writes them as bytes) are byte for byte those of the same
// block with log, and with dnstap and prometheus, which wrap the writer
// and so get the message, over thousands of subnets. What those plugins
// saw is checked too: a log line, a tapped response equal to the reply,
// and a count per query.
func TestWireAnswers(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := wireDBs(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", wireNodes)
	ov := writeFile(t, dir, "overrides.yaml", "overrides:\n  - {cidr: 1.5.0.0/16, nodes: [bj-u]}\n  - {cidr: 2400:5::/32, nodes: [bj-u]}\n")
	sock := filepath.Join(dir, "tap.sock")
	tap := newTapReceiver(t, sock)
	block := fmt.Sprintf(`gslb {
        geoip %s
        asn %s
        nodes %s
        overrides %s
        answers 2
    }`, city, asn, nodes, ov)
	_, bare, _ := net.SplitHostPort(testsupport.FreeAddr(t))
	_, logged, _ := net.SplitHostPort(testsupport.FreeAddr(t))
	_, tapped, _ := net.SplitHostPort(testsupport.FreeAddr(t))
	prom := testsupport.FreeAddr(t)
	startServer(t, fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    metadata
    %s
}
example.org:%s {
    bind 127.0.0.1
    metadata
    log . "WIRE id={>id} rcode={rcode} tier={/gslb/tier} node={/gslb/node}"
    %s
}
example.org:%s {
    bind 127.0.0.1
    prometheus %s
    dnstap unix://%s full
    %s
}`, bare, block, logged, block, tapped, prom, sock, block))
	addr := func(port string) string { return net.JoinHostPort("127.0.0.1", port) }
	waitFor(t, "the dnstap stream to carry a query", func() (bool, string) {
		exchange(t, "udp", addr(tapped), newQuery(t, warmupName, dns.TypeTXT, ""))
		select {
		case <-tap.warm:
			return true, ""
		case <-time.After(50 * time.Millisecond):
			return false, "no frame yet"
		}
	})
	server := func(port string) string { return "dns://127.0.0.1:" + port }
	before := sumSeries(t, "coredns_dns_responses_total", map[string]string{"server": server(tapped)})

	const n = 3000
	rng := rand.New(rand.NewPCG(22, 1))
	replies := map[uint16][]byte{}
	tiers := map[string]int{}
	compressed, negative := 0, 0
	for i := range n {
		q, network := wireQuery(i, rng)
		wire, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		got := rawReply(t, network, addr(bare), wire)
		for _, port := range []string{logged, tapped} {
			if want := rawReply(t, network, addr(port), wire); !bytes.Equal(got, want) {
				var a, b dns.Msg
				a.Unpack(got)
				b.Unpack(want)
				t.Fatalf("Query %d (%s, %s): the reply differs from the message path's:\n% x\n%v\nwant\n% x\n%v", i, network, q.Question[0].String(), got, &a, want, &b)
			}
		}
		var m dns.Msg
		if err := m.Unpack(got); err != nil {
			t.Fatalf("Query %d: %v", i, err)
		}
		if bytes.Contains(got, []byte{0xc0, 12}) { // a pointer to the question's name
			compressed++
		}
		if len(m.Ns) > 0 {
			negative++
		}
		replies[q.Id] = got
	}
	if compressed == 0 || negative == 0 {
		t.Errorf("Expected compressed and negative replies among the queries, got %d and %d", compressed, negative)
	}

	// log: one line per query, with the decision's labels.
	waitFor(t, "a log line per query", func() (bool, string) {
		c := strings.Count(logs.String(), "WIRE id=")
		return c >= n, fmt.Sprintf("%d of %d", c, n)
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "WIRE id="); ok {
			if f := strings.Fields(rest); len(f) == 4 {
				tiers[f[2]]++
			}
		}
	}
	for _, tier := range []string{"tier=province_isp", "tier=province", "tier=neighbor_isp", "tier=neighbor", "tier=region",
		"tier=country", "tier=continent", "tier=all", "tier=fail_open", "tier=fallback", "tier=override"} {
		if tiers[tier] == 0 {
			t.Errorf("No query decided at %s: %v", tier, tiers)
		}
	}
	// dnstap: each reply, as the tap saw it.
	waitFor(t, "every response in the dnstap stream", func() (bool, string) {
		c := tap.count()
		return c >= n, fmt.Sprintf("%d of %d", c, n)
	})
	tap.mu.Lock()
	for id, want := range replies {
		if got := tap.responses[id]; len(got) != 1 || !bytes.Equal(got[0], want) {
			t.Errorf("Query %d: tapped %d responses, want 1 equal to the reply", id, len(got))
		}
	}
	tap.mu.Unlock()
	// prometheus: a response counted per query; gslb counts the same
	// decisions in the block that writes bytes and in the others.
	if d := sumSeries(t, "coredns_dns_responses_total", map[string]string{"server": server(tapped)}) - before; d != n {
		t.Errorf("coredns_dns_responses_total counted %v responses, want %d", d, n)
	}
	for _, name := range []string{"coredns_gslb_decisions_total", "coredns_gslb_ecs_total", "coredns_gslb_node_answers_total"} {
		b, l := sumSeries(t, name, map[string]string{"server": server(bare)}), sumSeries(t, name, map[string]string{"server": server(logged)})
		if b != l || b == 0 {
			t.Errorf("%s: %v for the block that writes bytes, %v for the one with log", name, b, l)
		}
	}
}
