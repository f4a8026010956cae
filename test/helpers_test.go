package test

import (
	"fmt"
	golog "log"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	_ "github.com/gslbdns/gslb/cmd/coredns/plugins" // our plugin set, gslb before cache
	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// mu serializes caddy.Start: caddy's controller state is global.
var mu sync.Mutex

// Polling bounds for background effects (probes, file reload, online API).
const (
	pollEvery   = testsupport.PollEvery
	waitTimeout = testsupport.WaitTimeout
)

// toolTimeout bounds a command a test runs (the gslb tool, delv, bash): it
// guards against a hang, and a loaded machine took over a minute for an
// audit that takes seconds when it is quiet.
const toolTimeout = 5 * time.Minute

// input is a Corefile string as caddy input.
type input []byte

func (i input) Body() []byte       { return i }
func (i input) Path() string       { return "Corefile" }
func (i input) ServerType() string { return "dns" }

// server is a running CoreDNS instance; inst changes on restart.
type server struct {
	inst     *caddy.Instance
	udp, tcp string
	stopped  bool
}

// startServer starts CoreDNS from corefile and stops it when the test ends.
func startServer(t *testing.T, corefile string) *server {
	t.Helper()
	mu.Lock()
	caddy.Quiet = true
	dnsserver.Quiet = true
	inst, err := caddy.Start(input(corefile))
	mu.Unlock()
	if err != nil {
		t.Fatalf("Cannot start CoreDNS: %v\n%s", err, corefile)
	}
	s := &server{inst: inst}
	s.setPorts(t)
	t.Cleanup(s.stop)
	return s
}

// stop runs the OnShutdown callbacks, which Instance.Stop alone skips, and
// stops the listeners, as caddy does on a signal. Once: some plugins'
// callbacks (dnstap's) must not run twice.
func (s *server) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.inst.ShutdownCallbacks()
	s.inst.Stop()
}

// restart reloads the instance from corefile, as the reload plugin does.
func (s *server) restart(t *testing.T, corefile string) {
	t.Helper()
	mu.Lock()
	inst, err := s.inst.Restart(input(corefile))
	mu.Unlock()
	if err != nil {
		t.Fatalf("Cannot restart CoreDNS: %v", err)
	}
	s.inst = inst
	s.setPorts(t)
}

func (s *server) setPorts(t *testing.T) {
	t.Helper()
	srvs := s.inst.Servers()
	if len(srvs) == 0 || srvs[0].LocalAddr() == nil || srvs[0].Addr() == nil {
		t.Fatalf("CoreDNS instance has no UDP and TCP listener")
	}
	s.udp, s.tcp = srvs[0].LocalAddr().String(), srvs[0].Addr().String()
}

// addr returns the listener for network "udp" or "tcp".
func (s *server) addr(network string) string {
	if network == "tcp" {
		return s.tcp
	}
	return s.udp
}

// newQuery builds a query; ecs is "" (no ECS option) or a prefix such as
// "202.101.172.0/24".
func newQuery(t *testing.T, name string, qtype uint16, ecs string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if ecs == "" {
		return m
	}
	p, err := netip.ParsePrefix(ecs)
	if err != nil {
		t.Fatalf("Bad ECS prefix %q: %v", ecs, err)
	}
	e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(p.Bits()), Address: net.IP(p.Addr().AsSlice())}
	if p.Addr().Is6() {
		e.Family = 2
	}
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{e}}
	o.SetUDPSize(1232)
	m.Extra = append(m.Extra, o)
	return m
}

// exchange sends m over network to addr and fails the test on a transport error.
func exchange(t *testing.T, network, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 10 * time.Second} // generous: a loaded machine can stall a reply
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("Exchange %s over %s with %s: %v", m.Question[0].Name, network, addr, err)
	}
	if r.Id != m.Id {
		t.Fatalf("Reply id %d, want %d", r.Id, m.Id)
	}
	return r
}

// ask is exchange over UDP with a fresh query.
func ask(t *testing.T, s *server, name string, qtype uint16, ecs string) *dns.Msg {
	t.Helper()
	return exchange(t, "udp", s.udp, newQuery(t, name, qtype, ecs))
}

// answers returns the A/AAAA addresses of r, sorted.
func answers(r *dns.Msg) []string {
	out := inOrder(r)
	sort.Strings(out)
	return out
}

func answerOf(r *dns.Msg) string { return strings.Join(answers(r), ",") }

// replyECS returns the ECS option of r's OPT record, or nil.
func replyECS(r *dns.Msg) *dns.EDNS0_SUBNET {
	o := r.IsEdns0()
	if o == nil {
		return nil
	}
	for _, opt := range o.Option {
		if e, ok := opt.(*dns.EDNS0_SUBNET); ok {
			return e
		}
	}
	return nil
}

// waitFor polls cond until it returns true or waitTimeout passes; last
// describes the final state for the failure message.
var waitFor = testsupport.WaitFor

// logBuffer collects what the standard logger (and so clog and the log
// plugin) prints.
type logBuffer struct{ testsupport.LogBuffer }

// captureLog redirects the log output to a buffer until the test ends.
func captureLog(t *testing.T) *logBuffer {
	b := &logBuffer{}
	golog.SetOutput(b)
	t.Cleanup(clog.Discard)
	return b
}

// line waits for a log line that contains substr and returns it.
func (b *logBuffer) line(t *testing.T, substr string) string {
	t.Helper()
	var found string
	waitFor(t, fmt.Sprintf("a log line with %q", substr), func() (bool, string) {
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.Contains(l, substr) {
				found = l
				return true, ""
			}
		}
		return false, b.String()
	})
	return found
}

// logFormat prints every gslb label as gslb/NAME=VALUE after the query id,
// so that labels(line) can read them back.
const logFormat = `"GSLB id={>id} rcode={rcode} gslb/client={/gslb/client} gslb/client_source={/gslb/client_source} gslb/ecs={/gslb/ecs} gslb/country={/gslb/country} gslb/province={/gslb/province} gslb/city={/gslb/city} gslb/isp={/gslb/isp} gslb/asn={/gslb/asn} gslb/geo_source={/gslb/geo_source} gslb/tier={/gslb/tier} gslb/candidates={/gslb/candidates} gslb/node={/gslb/node} gslb/node_state={/gslb/node_state} gslb/distance_km={/gslb/distance_km} gslb/score={/gslb/score} gslb/rtt_ms={/gslb/rtt_ms} gslb/policy={/gslb/policy} gslb/ttl_reason={/gslb/ttl_reason} END"`

// labels parses a logFormat line.
func labels(line string) map[string]string {
	m := map[string]string{}
	_, rest, _ := strings.Cut(line, "GSLB ")
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// queryLabels sends m over UDP and returns the reply and the labels of its log line.
func queryLabels(t *testing.T, s *server, logs *logBuffer, m *dns.Msg) (*dns.Msg, map[string]string) {
	t.Helper()
	r := exchange(t, "udp", s.udp, m)
	return r, labels(logs.line(t, fmt.Sprintf("GSLB id=%d ", m.Id)))
}

// repoFile returns the absolute path of a file in the repository root.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Missing repository file: %v", err)
	}
	return p
}

// writeFile writes data to dir/name atomically (a rename), so that a file
// watcher never reads half of it, and returns the path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := atomicfile.WriteBytes(p, []byte(data)); err != nil {
		t.Fatal(err)
	}
	return p
}

// demoCorefile serves example.org with the demo databases and node table.
func demoCorefile(t *testing.T, extra string) string {
	return gslbCorefile(t, repoFile(t, "nodes.example.yaml"), extra)
}

// gslbCorefile serves example.org with the demo databases, the node table
// nodes, the extra gslb lines and every gslb label in the log.
func gslbCorefile(t *testing.T, nodes, extra string) string {
	return corefile(repoFile(t, "demo/gslb-demo-City.mmdb"), repoFile(t, "demo/gslb-demo-ASN.mmdb"), nodes, extra)
}

// corefile serves example.org with gslb over the databases city and asn
// ("" for none), the node table nodes and the extra gslb lines, with every
// gslb label in the log.
func corefile(city, asn, nodes, extra string) string {
	if asn != "" {
		asn = "asn " + asn
	}
	return fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    metadata
    log . %s
    gslb {
        geoip %s
        %s
        nodes %s
        %s
    }
}`, logFormat, city, asn, nodes, extra)
}

// eachSeries calls fn with each series of name whose labels include want,
// until fn returns false.
func eachSeries(t *testing.T, name string, want map[string]string, fn func(*dto.Metric) bool) {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
					continue series
				}
			}
			if !fn(m) {
				return
			}
		}
	}
}

// metric is the value of the first series of name, a counter or a gauge,
// whose labels include want, and whether there is one.
func metric(t *testing.T, name string, want map[string]string) (v float64, ok bool) {
	t.Helper()
	eachSeries(t, name, want, func(m *dto.Metric) bool {
		v, ok = m.GetGauge().GetValue(), true
		if c := m.GetCounter(); c != nil {
			v = c.GetValue()
		}
		return false
	})
	return v, ok
}

// sumSeries adds up the counters of name's series whose labels include want.
func sumSeries(t *testing.T, name string, want map[string]string) (sum float64) {
	t.Helper()
	eachSeries(t, name, want, func(m *dto.Metric) bool {
		sum += m.GetCounter().GetValue()
		return true
	})
	return sum
}

// seriesValue is metric's value, 0 without a series.
func seriesValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	v, _ := metric(t, name, want)
	return v
}

// counterValue is the value of name's series with label=value, 0 without one.
func counterValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	return seriesValue(t, name, map[string]string{label: value})
}

// gaugeValue is the value of name's series with label=value (any series
// when label is ""), -1 without one.
func gaugeValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	want := map[string]string{label: value}
	if label == "" {
		want = nil
	}
	if v, ok := metric(t, name, want); ok {
		return v
	}
	return -1
}
