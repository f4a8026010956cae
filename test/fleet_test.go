package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// fleetCandidate is adminNodes with img on sh only: img's answer tells
// whether a client is in the canary.
var fleetCandidate = strings.Replace(adminNodes, "nodes: [hz-a, bj]", "nodes: [sh]", 1)

const fleetToken = "s3cret-token-for-tests"

// fleetEnv is what the members of a test share: the files (at the same
// paths, so that the canary line is the same on every member) and Redis.
type fleetEnv struct {
	dir, city, asn, nodes, candidate, token string
	canaryPercent, canaryOpts               string // the canary line's share and block
	redis                                   *testredis.Server
}

func newFleetEnv(t *testing.T) *fleetEnv {
	e := &fleetEnv{dir: t.TempDir(), redis: testredis.Start(t)}
	e.city, e.asn = adminDBs(t, e.dir)
	e.nodes = writeFile(t, e.dir, "nodes.yaml", adminNodes)
	e.candidate = writeFile(t, e.dir, "candidate.yaml", fleetCandidate)
	e.token = writeToken(t, e.dir, fleetToken)
	return e
}

// fleetMember is one CoreDNS process of a fleet.
type fleetMember struct {
	name, dns, admin string
	redis, conf      string // the Redis address it is given ("": Redis's), its Corefile
	redisOpts        string // more lines of its redis block
	metrics          string // the prometheus plugin's address
	first            string // the first answer, for www from 1.3.0.0/24
	cmd              *exec.Cmd
	out              *testsupport.LogBuffer
	done             chan struct{}
}

// start runs a member with the fleet block's inner lines fleetLines and
// the extra gslb lines, and waits until it answers.
func (e *fleetEnv) start(t *testing.T, name, fleetLines, extra string) *fleetMember {
	return e.startVia(t, name, "", fleetLines, extra)
}

// startVia is start with the member reaching Redis at redis ("": Redis's
// own address).
func (e *fleetEnv) startVia(t *testing.T, name, redis, fleetLines, extra string) *fleetMember {
	t.Helper()
	m := &fleetMember{name: name, dns: testsupport.FreeAddr(t), admin: testsupport.FreeAddr(t), metrics: testsupport.FreeAddr(t), redis: redis}
	m.conf = writeFile(t, e.dir, name+".Corefile", e.corefile(m, fleetLines, extra))
	m.launch(t)
	return m
}

// launch runs the member's CoreDNS from its Corefile, and waits until it
// answers.
func (m *fleetMember) launch(t *testing.T) {
	t.Helper()
	name := m.name
	m.out, m.done = &testsupport.LogBuffer{}, make(chan struct{})
	m.cmd = exec.Command(corednsTool(t), "-conf", m.conf)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, out, done := m.cmd, m.out, m.done
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		stopProcess(cmd, done)
		if strings.Contains(out.String(), "DATA RACE") || strings.Contains(out.String(), "panic:") {
			t.Errorf("%s: a race or a panic", name)
		}
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, out.String())
		}
	})
	// Generous: a member that starts from a large state file on a busy
	// machine takes a while.
	var err error
	if !poll(30*time.Second, func() bool {
		select {
		case <-done:
			t.Fatalf("%s exited: %s", name, out.String())
		default:
		}
		m.first, err = m.query("www.example.org", "1.3.0.0/24")
		return err == nil
	}) {
		t.Fatalf("Timed out after 30s waiting for %s answering; last: %v", name, err)
	}
}

// corefile is member m's Corefile.
func (e *fleetEnv) corefile(m *fleetMember, fleetLines, extra string) string {
	name := m.name
	_, port, _ := strings.Cut(m.dns, ":")
	return fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    prometheus %s
    gslb {
        geoip %s
        asn %s
        nodes %s
        cooldown 0s
        admin %s {
            token_file %s
            state %s
        }
        redis %s {
            timeout 250ms
            %s
        }
        canary %s {
            salt 0123456789abcdef0123
            %s
        }
        fleet test {
            %s
        }
        %s
    }
}
`, port, m.metrics, e.city, e.asn, e.nodes, m.admin, e.token, filepath.Join(e.dir, name+"-state.yaml"), cmpOr(m.redis, e.redis.Addr()), m.redisOpts, e.canaryLine(), e.canaryOpts, fleetLines, extra)
}

// canaryLine is the canary line's FILE and PERCENT; only FILE with a
// plan (canaryPercent "plan").
func (e *fleetEnv) canaryLine() string {
	if e.canaryPercent == "plan" {
		return e.candidate
	}
	return e.candidate + " " + cmpOr(e.canaryPercent, "0")
}

func (m *fleetMember) stop() { stopProcess(m.cmd, m.done) }

// stopProcess ends cmd, whose Wait closes done, with SIGTERM (continuing
// it first if it was stopped), and kills it after 10s.
func stopProcess(cmd *exec.Cmd, done <-chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// query asks for name's A records from a client in subnet ecs, and returns
// the answer; an error for anything but a NOERROR answer with addresses.
func (m *fleetMember) query(name, ecs string) (string, error) {
	msg := new(dns.Msg)
	msg.SetQuestion(dns.Fqdn(name), dns.TypeA)
	var p [4]byte
	var bits int
	fmt.Sscanf(ecs, "%d.%d.%d.%d/%d", &p[0], &p[1], &p[2], &p[3], &bits)
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{
		&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(bits), Address: p[:]}}}
	o.SetUDPSize(1232)
	msg.Extra = append(msg.Extra, o)
	c := &dns.Client{Timeout: 5 * time.Second} // a lost reply, not a slow one on a loaded machine
	r, _, err := c.Exchange(msg, m.dns)
	if err != nil {
		return "", err
	}
	if r.Rcode != dns.RcodeSuccess {
		return "", fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
	}
	a := answerOf(r)
	if a == "" {
		return "", fmt.Errorf("no answer")
	}
	return a, nil
}

func (m *fleetMember) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return m.callToken(t, method, path, fleetToken, body)
}

// callToken is call with another bearer token (a feed source's).
func (m *fleetMember) callToken(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+m.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", m.name, method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func (m *fleetMember) must(t *testing.T, method, path, body string) string {
	t.Helper()
	code, out := m.call(t, method, path, body)
	if code != 200 {
		t.Fatalf("%s: %s %s: %d %s", m.name, method, path, code, out)
	}
	return out
}

// within waits until every member's answer for name from ecs satisfies ok,
// and fails unless it took at most limit.
// promptly is the bound of a change reaching every member: the README's
// "within a second", with room for a machine loaded by other builds.
const promptly = 5 * time.Second

func within(t *testing.T, limit time.Duration, what string, ms []*fleetMember, name, ecs string, ok func(string) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for _, m := range ms {
		var a string
		var err error
		if !poll(max(limit, testsupport.WaitTimeout), func() bool { a, err = m.query(name, ecs); return err == nil && ok(a) }) {
			t.Fatalf("Timed out after %v waiting for %s: %s; last: %s %v", max(limit, testsupport.WaitTimeout), m.name, what, a, err)
		}
	}
	took := time.Since(start)
	if took > limit {
		t.Errorf("%s: took %v, more than %v", what, took, limit)
	}
	t.Logf("%s: %v", what, took)
	return took
}

// prober asks every member continually and counts the queries that fail.
type prober struct {
	failed, asked atomic.Int64
	stop          chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	errs          []string
}

func startProber(ms ...*fleetMember) *prober {
	p := &prober{stop: make(chan struct{})}
	for _, m := range ms {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				select {
				case <-p.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				p.asked.Add(1)
				if _, err := m.query("www.example.org", "1.3.0.0/24"); err != nil {
					p.failed.Add(1)
					p.mu.Lock()
					p.errs = append(p.errs, m.name+": "+err.Error())
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func (p *prober) check(t *testing.T) {
	t.Helper()
	close(p.stop)
	p.wg.Wait()
	t.Logf("%d queries, %d failed", p.asked.Load(), p.failed.Load())
	if p.failed.Load() != 0 {
		t.Errorf("Expected 0 failed queries, got %d of %d: %v", p.failed.Load(), p.asked.Load(), p.errs)
	}
}

type fleetNode struct {
	ID      string
	Drained bool
	Origin  *struct {
		Member string
		Time   time.Time
	}
}

func (m *fleetMember) node(t *testing.T, id string) fleetNode {
	t.Helper()
	var ns []fleetNode
	if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/nodes", "")), &ns); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("%s: no node %s in /v1/nodes", m.name, id)
	return fleetNode{}
}

func not(a string) func(string) bool   { return func(s string) bool { return s != a } }
func equal(a string) func(string) bool { return func(s string) bool { return s == a } }

// TestFleetSharedState: drains, pins and the canary share made through one
// member are obeyed by the others within a second, a member started later
// has them at its first answer, and while Redis is down a change applies
// where it was made and reaches the others when Redis returns.
func TestFleetSharedState(t *testing.T) {
	e := newFleetEnv(t)
	a := e.start(t, "a", "vantage telecom ZJ", "")
	b := e.start(t, "b", "vantage telecom", "")
	c := e.start(t, "c", "vantage unicom", "")
	all := []*fleetMember{a, b, c}
	// 1.3.0.0/24 is Zhejiang: hz-a (192.0.2.1) serves it.
	within(t, promptly, "hz-a serving Zhejiang", all, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	p := startProber(all...)

	a.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, promptly, "drain through a", all, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	if n := c.node(t, "hz-a"); !n.Drained || n.Origin == nil || !strings.HasSuffix(n.Origin.Member, ":"+portOf(a.dns)) {
		t.Errorf("c: expected hz-a drained with origin a, got %+v", n)
	}

	b.must(t, "POST", "/v1/pins", `{"cidr": "1.5.0.0/16", "nodes": ["bj"]}`)
	within(t, promptly, "pin through b", all, "www.example.org", "1.5.0.0/24", equal("192.0.2.4"))
	if out := a.must(t, "GET", "/v1/pins", ""); !strings.Contains(out, `"member": "`) || !strings.Contains(out, ":"+portOf(b.dns)) {
		t.Errorf("a: expected the pin's origin b in /v1/pins, got %s", out)
	}

	c.must(t, "POST", "/v1/canary", `{"percent": 100}`)
	within(t, promptly, "canary share through c", []*fleetMember{c, a, b}, "img.example.org", "1.7.0.0/24", equal("192.0.2.3"))

	// A member started afterwards has all three at its first answer.
	d := e.start(t, "d", "vantage mobile", "")
	checkFirst := func(d *fleetMember, when string) {
		t.Helper()
		if d.first == "192.0.2.1" {
			t.Errorf("d %s: first answer %s: the drain is missing", when, d.first)
		}
		if got, err := d.query("www.example.org", "1.5.0.0/24"); err != nil || got != "192.0.2.4" {
			t.Errorf("d %s: answer for the pinned subnet: %s %v", when, got, err)
		}
		if got, err := d.query("img.example.org", "1.7.0.0/24"); err != nil || got != "192.0.2.3" {
			t.Errorf("d %s: answer of the canary: %s %v", when, got, err)
		}
	}
	checkFirst(d, "started later")
	d.stop()

	// Redis down: a member that starts has its state file's copy; the
	// drain holds; an undrain through a applies on a.
	e.redis.Stop()
	d = e.start(t, "d", "vantage mobile", "")
	checkFirst(d, "started while Redis is down")
	d.stop()
	a.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
	within(t, promptly, "undrain on a while Redis is down", []*fleetMember{a}, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	for _, m := range []*fleetMember{b, c} {
		if got, err := m.query("www.example.org", "1.3.0.0/24"); err != nil || got == "192.0.2.1" {
			t.Errorf("%s: expected the drain to hold while Redis is down, got %s %v", m.name, got, err)
		}
	}
	testsupport.WaitFor(t, "a's undrain counted as pending while Redis is down", func() (bool, string) {
		v, _ := a.metric(t, "coredns_gslb_fleet_changes_total", `origin="local"`, `result="pending"`)
		return v >= 1, fmt.Sprint(v)
	})
	// Redis back, empty: a's undrain reaches b and c.
	e.redis.Restart()
	within(t, promptly, "undrain reaching b and c after Redis returned", []*fleetMember{b, c}, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	p.check(t)
	testsupport.WaitFor(t, "3 members counted", func() (bool, string) {
		v, _ := b.metric(t, "coredns_gslb_fleet_members")
		return v == 3, fmt.Sprint(v)
	})
	if v, ok := c.metric(t, "coredns_gslb_fleet_changes_total", `origin="remote"`, `result="applied"`); !ok || v < 3 {
		t.Errorf("c: expected the remote changes counted as applied, got %v", v)
	}
	if v, ok := c.metric(t, "coredns_gslb_fleet_sync_age_seconds"); !ok || v > 2 {
		t.Errorf("c: expected a fresh sync, got %v %v", v, ok)
	}
}

func portOf(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return port
}

// sourceTarget is an HTTP health endpoint on 127.0.0.1 that drops the
// connections coming from 127.0.0.2, and notes the source of every probe.
type sourceTarget struct {
	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	hits []hit
}

type hit struct {
	source string
	at     time.Time
}

func newSourceTarget(t *testing.T) *sourceTarget {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := &sourceTarget{ln: ln}
	st.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		st.mu.Lock()
		st.hits = append(st.hits, hit{host, time.Now()})
		st.mu.Unlock()
		fmt.Fprint(w, "ok")
	})}
	go st.srv.Serve(dropFrom{ln, "127.0.0.2"})
	t.Cleanup(func() { st.srv.Close() })
	return st
}

// sources counts the probes since from, by source address.
func (st *sourceTarget) sources(from time.Time) map[string]int {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]int{}
	for _, h := range st.hits {
		if !h.at.Before(from) {
			out[h.source]++
		}
	}
	return out
}

func (st *sourceTarget) url() string { return "http://" + st.ln.Addr().String() + "/health" }

// dropFrom closes the connections from one source at once.
type dropFrom struct {
	net.Listener
	source string
}

func (d dropFrom) Accept() (net.Conn, error) {
	for {
		c, err := d.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if host, _, _ := net.SplitHostPort(c.RemoteAddr().String()); host == d.source {
			c.Close()
			continue
		}
		return c, nil
	}
}

// vantageNodes: hz-a, probed at url, and sh, unprobed, both telecom.
func vantageNodes(url string) string {
	return fmt.Sprintf(`nodes:
  - id: hz-a
    ipv4: [192.0.2.1]
    country: CN
    province: ZJ
    isp: telecom
    lat: 30.27
    lon: 120.16
    probe: {type: http, url: "%s", interval: 1s, timeout: 900ms, rise: 1, fall: 1, hold_down: 0s}
  - {id: sh, ipv4: [192.0.2.3], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47}
  - {id: bj, ipv4: [192.0.2.4], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.41}
records:
  - name: www.example.org
  - name: img.example.org
    nodes: [hz-a, bj]
`, url)
}

// vantageDBs: 1.0.0.0/8 is Zhejiang China Telecom, 5.0.0.0/8 Zhejiang
// China Unicom.
func (e *fleetEnv) vantageDBs(t *testing.T) {
	e.city, e.asn = testsupport.WriteDBs(t, e.dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
		{Network: "5.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
	}, []mmdbgen.ASN{
		{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"},
		{Network: "5.0.0.0/8", ASN: 4837, Org: "China Unicom"},
	})
}

// TestFleetVantage: a node that refuses only the probes of the unicom
// member is out for unicom clients on every member, and stays in for
// telecom clients.
func TestFleetVantage(t *testing.T) {
	e := newFleetEnv(t)
	e.vantageDBs(t)
	target := newSourceTarget(t)
	e.nodes = writeFile(t, e.dir, "nodes.yaml", vantageNodes(target.url()))
	a := e.start(t, "a", "vantage telecom", "")
	b := e.start(t, "b", "vantage unicom\nprobe_source 127.0.0.2", "")
	c := e.start(t, "c", "vantage telecom", "")
	all := []*fleetMember{a, b, c}
	p := startProber(all...)
	within(t, 2*promptly, "hz-a out for unicom clients", all, "www.example.org", "5.3.0.0/24", not("192.0.2.1"))
	// Telecom clients stay on it once each member has the others' verdicts
	// (until then a member alone decides with what it has).
	within(t, 2*promptly, "hz-a kept for telecom clients", all, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	// Still so a few probe rounds later: the verdicts are steady.
	time.Sleep(3 * time.Second)
	for _, m := range all {
		if got, _ := m.query("www.example.org", "5.3.0.0/24"); got == "192.0.2.1" {
			t.Errorf("%s: hz-a back for unicom clients", m.name)
		}
		if got, _ := m.query("www.example.org", "1.3.0.0/24"); got != "192.0.2.1" {
			t.Errorf("%s: telecom clients moved off hz-a: %s", m.name, got)
		}
	}
	t.Logf("probes at the target by source: %v", target.sources(time.Time{}))
	for vantage, want := range map[string]float64{"unicom": 1, "telecom": 0} {
		if v, ok := a.metric(t, "coredns_gslb_fleet_node_down", `node="hz-a"`, `vantage="`+vantage+`"`); !ok || v != want {
			t.Errorf("a: fleet_node_down{hz-a, %s}: expected %v, got %v %v", vantage, want, v, ok)
		}
	}
	// explain says which vantage's verdict counted.
	var x struct {
		Candidates []struct{ ID, State, Vantage string }
	}
	if err := json.Unmarshal([]byte(c.must(t, "GET", "/v1/explain?addr=5.3.0.1&name=www.example.org", "")), &x); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range x.Candidates {
		if n.ID == "hz-a" {
			found = true
			if n.State != "down" || n.Vantage != "unicom" {
				t.Errorf("c: explain for a unicom client: expected hz-a down as unicom sees it, got %+v", n)
			}
		}
	}
	if !found {
		t.Errorf("c: explain lists no hz-a: %+v", x)
	}
	// Redis out of reach past a verdict's freshness: each member says so
	// and answers from its own probes (a's see hz-a up).
	e.redis.Stop()
	testsupport.WaitFor(t, "a isolated", func() (bool, string) {
		v, _ := a.metric(t, "coredns_gslb_fleet_isolated")
		return v == 1 && strings.Contains(a.out.String(), "[WARNING] plugin/gslb: Fleet test: Redis unreachable"), fmt.Sprint(v)
	})
	within(t, 2*promptly, "a back on its own probes", []*fleetMember{a}, "www.example.org", "5.3.0.0/24", equal("192.0.2.1"))
	p.check(t)
}

// TestFleetProbers: with probers 1, three members of one vantage probe a
// node one at a time, and another takes over when the holder dies.
func TestFleetProbers(t *testing.T) {
	e := newFleetEnv(t)
	e.vantageDBs(t)
	target := newSourceTarget(t)
	e.nodes = writeFile(t, e.dir, "nodes.yaml", vantageNodes(target.url()))
	bySource := map[string]*fleetMember{}
	var all []*fleetMember
	for i, name := range []string{"a", "b", "c"} {
		src := fmt.Sprintf("127.0.0.%d", 3+i)
		m := e.start(t, name, "vantage telecom\nprobers 1\nprobe_source "+src, "")
		bySource[src] = m
		all = append(all, m)
	}
	p := startProber(all...)
	// One prober at a time, once the first leases are taken.
	holder := func(from time.Time) (string, map[string]int) {
		got := target.sources(from)
		if len(got) != 1 {
			return "", got
		}
		for s := range got {
			return s, got
		}
		return "", got
	}
	var src string
	testsupport.WaitFor(t, "a single prober", func() (bool, string) {
		from := time.Now()
		time.Sleep(5 * time.Second) // five probe intervals
		s, got := holder(from)
		src = s
		return s != "" && got[s] >= 3, fmt.Sprint(got)
	})
	from := time.Now()
	time.Sleep(2 * time.Second)
	if s, got := holder(from); s != src {
		t.Errorf("Expected only %s probing for 2s, got %v", src, got)
	} else {
		t.Logf("probes in 2s with probers 1: %v", got)
	}
	// The holder dies without leaving: its lease lapses, another takes over.
	p.check(t)
	dead := bySource[src]
	var alive []*fleetMember
	for _, m := range all {
		if m != dead {
			alive = append(alive, m)
		}
	}
	p = startProber(alive...)
	dead.cmd.Process.Kill()
	<-dead.done
	killed := time.Now()
	var took time.Duration
	testsupport.WaitFor(t, "another member taking the probes over", func() (bool, string) {
		got := target.sources(killed)
		for s := range got {
			if s != src {
				target.mu.Lock()
				for _, h := range target.hits {
					if h.source == s && !h.at.Before(killed) {
						took = h.at.Sub(killed)
						break
					}
				}
				target.mu.Unlock()
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	t.Logf("takeover %v after the holder died", took)
	// The lease lapses within two probe intervals; a second more for a
	// loaded machine.
	if most := 3 * time.Second; took > most {
		t.Errorf("Takeover took %v, more than %v", took, most)
	}
	testsupport.WaitFor(t, "a single prober after the takeover", func() (bool, string) {
		from := time.Now()
		time.Sleep(2 * time.Second) // two probe intervals
		s, got := holder(from)
		return s != "" && s != src, fmt.Sprint(got)
	})
	p.check(t)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestFleetCanaryRollback: the canary's counts add up over the fleet, and
// the rollback, decided once, holds on every member together, though no
// member alone counted rollback_min decisions.
func TestFleetCanaryRollback(t *testing.T) {
	e := newFleetEnv(t)
	e.candidate = writeFile(t, e.dir, "candidate.yaml", canaryNodes) // Zhejiang to Beijing: cross-province
	e.canaryPercent, e.canaryOpts = "50", "rollback_cross 0.1\nrollback_min 60"
	a := e.start(t, "a", "vantage telecom", "")
	b := e.start(t, "b", "vantage telecom", "")
	c := e.start(t, "c", "vantage unicom", "")
	all := []*fleetMember{a, b, c}
	type canaryState struct {
		RolledBack bool   `json:"rolled_back"`
		Reason     string `json:"reason"`
		Decisions  uint64 `json:"decisions"`
	}
	state := func(m *fleetMember) canaryState {
		var s canaryState
		if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/canary", "")), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// 240 Zhejiang subnets, a third on each member: about 40 canary
	// decisions each, 120 in the fleet.
	for i, sn := range zjSubnets(240) {
		if _, err := all[i%3].query("www.example.org", sn); err != nil {
			t.Fatalf("%s: %v", sn, err)
		}
	}
	for _, m := range all {
		if d := state(m).Decisions; d >= 60 {
			t.Fatalf("%s counted %d canary decisions alone: the test needs fewer than rollback_min", m.name, d)
		}
	}
	var first time.Time
	seen := map[string]time.Duration{}
	testsupport.WaitFor(t, "the rollback on every member", func() (bool, string) {
		for _, m := range all {
			if _, ok := seen[m.name]; ok {
				continue
			}
			if s := state(m); s.RolledBack {
				if first.IsZero() {
					first = time.Now()
				}
				seen[m.name] = time.Since(first)
			}
		}
		return len(seen) == 3, fmt.Sprint(seen)
	})
	t.Logf("rolled back on each member after the first: %v", seen)
	for name, d := range seen {
		if d > time.Second {
			t.Errorf("%s rolled back %v after the first", name, d)
		}
	}
	reasons := map[string]bool{}
	for _, m := range all {
		s := state(m)
		_, by, _ := strings.Cut(s.Reason, "decided by ")
		reasons[by] = true
		if !strings.Contains(s.Reason, "fleet-wide") {
			t.Errorf("%s: expected a fleet-wide rollback, got %q", m.name, s.Reason)
		}
	}
	if len(reasons) != 1 {
		t.Errorf("Expected one member deciding the rollback, got %v", reasons)
	}
	// Every member answers stable now.
	for _, m := range all {
		for _, sn := range zjSubnets(20) {
			if got, _ := m.query("www.example.org", sn); got != "192.0.2.1" {
				t.Errorf("%s: %s still in the canary after the rollback: %s", m.name, sn, got)
			}
		}
	}
}

// metric is the value of the series of name whose labels are all of
// labels ("k=\"v\"" pairs, as Prometheus prints them), from the member's
// /metrics; false when it has none.
func (m *fleetMember) metric(t *testing.T, name string, labels ...string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		t.Fatalf("%s: /metrics: %v", m.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		ok := true
		for _, lb := range labels {
			ok = ok && strings.Contains(l, lb)
		}
		if !ok {
			continue
		}
		var v float64
		fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
		return v, true
	}
	return 0, false
}

// TestFleetReload: a Corefile reload keeps the membership, and the new
// instance applies the fleet's changes and shares its own.
func TestFleetReload(t *testing.T) {
	e := newFleetEnv(t)
	b := e.start(t, "b", "vantage telecom", "")
	logs := captureLog(t)
	a := &fleetMember{name: "a", dns: testsupport.FreeAddr(t), admin: testsupport.FreeAddr(t), metrics: testsupport.FreeAddr(t)}
	s := startServer(t, e.corefile(a, "vantage telecom", ""))
	a.dns = s.udp
	b.must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, promptly, "b's drain on a", []*fleetMember{a}, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	s.restart(t, e.corefile(a, "vantage telecom", "ttl 30"))
	b.must(t, "POST", "/v1/nodes/hz-a/undrain", "")
	within(t, promptly, "b's undrain on a after a reload", []*fleetMember{a}, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	a.must(t, "POST", "/v1/nodes/sh/drain", "")
	testsupport.WaitFor(t, "a's drain after the reload on b", func() (bool, string) {
		n := b.node(t, "sh")
		return n.Drained, fmt.Sprint(n)
	})
	if n := strings.Count(logs.String(), "Fleet test: member"); n != 1 {
		t.Errorf("Expected one membership across the reload, got %d:\n%s", n, logs.String())
	}
}
