package gslb

import (
	"bufio"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// scrape reads the text exposition at http://addr/metrics: each sample's
// value by its name and labels, those of the series whose name has one
// of the prefixes, with the server label dropped (a fresh server has a
// port of its own).
func scrape(t *testing.T, addr string, prefixes ...string) map[string]float64 {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("Scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		keep := false
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(line, p)
		}
		i := strings.LastIndexByte(line, ' ')
		if !keep || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("Scrape %s: bad sample %q", addr, line)
		}
		out[serverLabel.ReplaceAllString(line[:i], "")] += v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("Scrape %s: %v", addr, err)
	}
	return out
}

var serverLabel = regexp.MustCompile(`server="[^"]*",?`)

// The series CoreDNS's prometheus plugin keeps per reply that do not
// measure time.
var replySeries = []string{"coredns_dns_requests_total", "coredns_dns_responses_total", "coredns_dns_response_size_bytes"}

// TestWireMetricsThroughCoreDNS: through a real CoreDNS with prometheus in
// gslb's block, the reply series it exports (requests, responses by rcode
// and plugin, response sizes) are the same whether gslb writes its replies
// as bytes or as messages: for addresses, NXDOMAIN and NODATA, with ECS,
// with EDNS alone and without, over UDP and TCP.
func TestWireMetricsThroughCoreDNS(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	type q struct {
		name  string
		qtype uint16
		ecs   string // "": none; "edns": EDNS without ECS
		rcode int
	}
	qs := []q{
		{"www.example.org", dns.TypeA, "1.0.1.0/24", dns.RcodeSuccess},
		{"nothere.example.org", dns.TypeA, "1.0.1.0/24", dns.RcodeNameError},
		{"www.example.org", dns.TypeMX, "1.0.1.0/24", dns.RcodeSuccess},
		{"www.example.org", dns.TypeA, "edns", dns.RcodeSuccess},
		{"nothere.example.org", dns.TypeAAAA, "edns", dns.RcodeNameError},
		{"www.example.org", dns.TypeA, "", dns.RcodeSuccess},
		{"www.example.org", dns.TypeTXT, "", dns.RcodeSuccess},
	}
	deltas := map[bool]map[string]float64{}
	t.Cleanup(func() { messageOnly.Store(false) })
	for _, message := range []bool{false, true} {
		messageOnly.Store(message)
		maddr := testsupport.FreeAddr(t)
		inst := startCoreDNS(t, "example.org:0 {\nbind 127.0.0.1\nroot "+dir+"\nprometheus "+maddr+"\n"+
			fmt.Sprintf(fixtureBlock, "rrl off\n")+"\n}\n")
		before := scrape(t, maddr, replySeries...)
		sent := 0
		for _, network := range []string{"udp", "tcp"} {
			addr := inst.Servers()[0].LocalAddr().String()
			if network == "tcp" {
				addr = inst.Servers()[0].Addr().String()
			}
			c := &dns.Client{Net: network, Timeout: 10 * time.Second}
			for _, x := range qs {
				m := query(x.name, x.qtype, nil)
				switch x.ecs {
				case "":
				case "edns":
					m.SetEdns0(1232, false)
				default:
					m = query(x.name, x.qtype, subnet(x.ecs))
				}
				for range 3 {
					r, _, err := c.Exchange(m, addr)
					if err != nil {
						t.Fatalf("Exchange %s over %s: %v", x.name, network, err)
					}
					if r.Rcode != x.rcode {
						t.Fatalf("%s %s over %s: rcode %d, want %d", x.name, dns.TypeToString[x.qtype], network, r.Rcode, x.rcode)
					}
					sent++
				}
			}
		}
		// The plugin counts a reply after writing it, its rcode last of its
		// series (CoreDNS's vars.Report): await that count.
		var after map[string]float64
		deadline := time.Now().Add(30 * time.Second)
		for {
			after = scrape(t, maddr, replySeries...)
			n := 0.0
			for k, v := range after {
				if strings.HasPrefix(k, "coredns_dns_responses_total{") {
					n += v - before[k]
				}
			}
			if n >= float64(sent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CoreDNS counted %v replies of %d requests sent", n, sent)
			}
			time.Sleep(20 * time.Millisecond)
		}
		d := map[string]float64{}
		for k, v := range after {
			if v != before[k] {
				d[k] = v - before[k]
			}
		}
		deltas[message] = d
	}
	messageOnly.Store(false)
	wire, msg := deltas[false], deltas[true]
	if len(msg) == 0 {
		t.Fatal("Expected reply series from CoreDNS's prometheus plugin, got none")
	}
	for k, v := range msg {
		if wire[k] != v {
			t.Errorf("%s: %v with the wire path, %v with the message path", k, wire[k], v)
		}
	}
	for k, v := range wire {
		if _, ok := msg[k]; !ok {
			t.Errorf("%s: %v with the wire path, absent with the message path", k, v)
		}
	}
	for _, want := range []string{`rcode="NOERROR"`, `rcode="NXDOMAIN"`} {
		found := false
		for k := range wire {
			found = found || strings.HasPrefix(k, "coredns_dns_responses_total{") && strings.Contains(k, want) && strings.Contains(k, `plugin="gslb"`)
		}
		if !found {
			t.Errorf("Expected coredns_dns_responses_total{%s,plugin=\"gslb\"} to count, got %v", want, wire)
		}
	}
}

// TestMetricsFromAnotherBlock: prometheus in a server block of its own
// (a zone nobody asks for, on gslb's port) serves gslb's metrics, which
// count gslb's queries and its replies by rcode (those it writes, and the
// errors it has the server write), while gslb's block, without
// prometheus, adds nothing to CoreDNS's per-reply series.
func TestMetricsFromAnotherBlock(t *testing.T) {
	dir := fixture(t, fixtureNodes)
	maddr := testsupport.FreeAddr(t)
	inst := startCoreDNS(t, "example.org:0 {\nbind 127.0.0.1\nroot "+dir+"\nerrors\n"+fmt.Sprintf(fixtureBlock, "rrl off\n")+"\n}\n"+
		"metrics.invalid:0 {\nbind 127.0.0.1\nprometheus "+maddr+"\n}\n")
	series := append([]string{"coredns_gslb_decisions_total", "coredns_gslb_ecs_total", "coredns_gslb_responses_total"}, replySeries...)
	before := scrape(t, maddr, series...)
	c := &dns.Client{Timeout: 10 * time.Second}
	const n = 5
	for range n {
		r, _, err := c.Exchange(query("www.example.org", dns.TypeA, subnet("1.0.1.0/24")), inst.Servers()[0].LocalAddr().String())
		if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			t.Fatalf("Exchange: %v, %v", r, err)
		}
	}
	ask := func(m *dns.Msg, rcode int) {
		t.Helper()
		r, _, err := c.Exchange(m, inst.Servers()[0].LocalAddr().String())
		if err != nil || r.Rcode != rcode {
			t.Fatalf("Exchange %s: %v, %v, want %s", m.Question[0].String(), r, err, dns.RcodeToString[rcode])
		}
	}
	for range 3 {
		ask(query("nothere.example.org", dns.TypeA, nil), dns.RcodeNameError)
	}
	ask(query("example.org", dns.TypeAXFR, nil), dns.RcodeRefused)
	notify := query("example.org", dns.TypeSOA, nil)
	notify.Opcode = dns.OpcodeNotify
	ask(notify, dns.RcodeNotImplemented)
	// gslb counts before it writes: the counts are there with the replies.
	after := scrape(t, maddr, series...)
	got := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			name, _, _ := strings.Cut(k, "{")
			got[name] += d
		}
	}
	for _, name := range []string{"coredns_gslb_decisions_total", "coredns_gslb_ecs_total"} {
		if got[name] != n {
			t.Errorf("%s counted %v of %d queries", name, got[name], n)
		}
	}
	for rc, want := range map[string]float64{"NOERROR": n, "NXDOMAIN": 3, "REFUSED": 1, "NOTIMP": 1} {
		k := `coredns_gslb_responses_total{rcode="` + rc + `",zone="example.org."}`
		if d := after[k] - before[k]; d != want {
			t.Errorf("%s counted %v, want %v (series: %v)", k, d, want, after)
		}
	}
	for name, d := range got {
		for _, p := range replySeries {
			if strings.HasPrefix(name, p) {
				t.Errorf("%s counted %v for a block without prometheus", name, d)
			}
		}
	}
}
