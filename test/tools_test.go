package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	dnstap "github.com/dnstap/golang-dnstap"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"
)

var tool struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tool.dir != "" {
		os.RemoveAll(tool.dir)
	}
	os.Exit(code)
}

// gslbTool builds cmd/gslb, once per run, the way a user would.
func gslbTool(t *testing.T) string {
	t.Helper()
	tool.once.Do(func() {
		tool.dir, tool.err = os.MkdirTemp("", "gslb-tool-")
		if tool.err != nil {
			return
		}
		tool.path = filepath.Join(tool.dir, "gslb")
		out, err := exec.Command("go", "build", "-o", tool.path, "github.com/gslbdns/gslb/cmd/gslb").CombinedOutput()
		if err != nil {
			tool.err = fmt.Errorf("go build ./cmd/gslb: %v\n%s", err, out)
		}
	})
	if tool.err != nil {
		t.Fatal(tool.err)
	}
	return tool.path
}

// runTool runs the gslb command and returns its output and exit status.
func runTool(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gslbTool(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("gslb %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// toolProvinces are the fixture's provinces: province i is 1.(i+1).0.0/16,
// China Telecom in its lower half and China Unicom in its upper half, and
// 2400:(i+1)::/32.
var toolProvinces = []string{"BJ", "SH", "ZJ", "JS", "GD", "SC", "HB", "HN", "SD", "FJ", "LN", "SN"}

// toolFixture writes City and ASN databases over toolProvinces, plus
// 2.0.0.0/16 known only as China and 3.0.0.0/16 in the United States.
func toolFixture(t *testing.T, dir string) (city, asn string) {
	t.Helper()
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	for i, p := range toolProvinces {
		lat, lon, ok := geo.ProvinceCapital("CN", p)
		if !ok {
			t.Fatalf("No capital for %s", p)
		}
		cities = append(cities,
			mmdbgen.City{Network: fmt.Sprintf("1.%d.0.0/16", i+1), Country: "CN", Province: p, Lat: lat, Lon: lon, Radius: 50},
			mmdbgen.City{Network: fmt.Sprintf("2400:%x::/32", i+1), Country: "CN", Province: p, Lat: lat, Lon: lon, Radius: 50})
		asns = append(asns,
			mmdbgen.ASN{Network: fmt.Sprintf("1.%d.0.0/17", i+1), ASN: 4134, Org: "Chinanet"},
			mmdbgen.ASN{Network: fmt.Sprintf("1.%d.128.0/17", i+1), ASN: 4837, Org: "China Unicom"})
	}
	cities = append(cities,
		mmdbgen.City{Network: "2.0.0.0/16", Country: "CN", Lat: 34.77, Lon: 113.72, Radius: 1000},
		mmdbgen.City{Network: "3.0.0.0/16", Country: "US", Province: "CA", Lat: 37.4, Lon: -122.1, Radius: 100})
	return testsupport.WriteDBs(t, dir, cities, asns)
}

// toolNodes: telecom nodes in the first six provinces (two equal ones in
// Zhejiang), unicom nodes in the first three, one in the United States;
// the Beijing and US nodes have IPv6.
const toolNodes = `nodes:
  - {id: bj-telecom, ipv4: [192.0.2.1], ipv6: ["2001:db8::1"], country: CN, province: BJ, isp: telecom, lat: 39.90, lon: 116.41, load: 0.3}
  - {id: sh-telecom, ipv4: [192.0.2.2], country: CN, province: SH, isp: telecom, lat: 31.23, lon: 121.47, load: 0.2, cost: 2}
  - {id: zj-telecom-a, ipv4: [192.0.2.3], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: zj-telecom-b, ipv4: [192.0.2.4], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: js-telecom, ipv4: [192.0.2.5], country: CN, province: JS, isp: telecom, lat: 32.06, lon: 118.80, load: 0.95}
  - {id: gd-telecom, ipv4: [192.0.2.6], country: CN, province: GD, isp: telecom, lat: 23.13, lon: 113.26}
  - {id: sc-telecom, ipv4: [192.0.2.7], country: CN, province: SC, isp: telecom, lat: 30.66, lon: 104.07, cost: 3}
  - {id: bj-unicom, ipv4: [192.0.2.11], country: CN, province: BJ, isp: unicom, lat: 39.90, lon: 116.41}
  - {id: sh-unicom, ipv4: [192.0.2.12], country: CN, province: SH, isp: unicom, lat: 31.23, lon: 121.47, load: 0.5}
  - {id: zj-unicom, ipv4: [192.0.2.13], country: CN, province: ZJ, isp: unicom, lat: 30.27, lon: 120.16}
  - {id: us-west, ipv4: [198.51.100.1], ipv6: ["2001:db8::100"], country: US, province: CA, lat: 37.4, lon: -122.1}
records:
  - name: www.example.org
  - name: cdn.example.org
    ttl: 30
    nodes: [bj-telecom, zj-telecom-a, zj-telecom-b, us-west]
`

// toolSetup writes the fixture and a Corefile into a directory and
// returns the Corefile's path and text.
func toolSetup(t *testing.T, nodes, extra string) (dir, conf, text string) {
	t.Helper()
	dir = t.TempDir()
	city, asn := toolFixture(t, dir)
	n := writeFile(t, dir, "nodes.yaml", nodes)
	text = corefile(city, asn, n, extra)
	conf = writeFile(t, dir, "Corefile", text)
	return dir, conf, text
}

// toolClients are /24s (/48s) all over the fixture: every province in
// both carriers, China without a province, the US, and unknown space.
func toolClients(n int) []string {
	r := rand.New(rand.NewPCG(7, 11))
	var out []string
	for range n {
		switch k := r.IntN(20); {
		case k < 14:
			out = append(out, fmt.Sprintf("1.%d.%d.0/24", 1+r.IntN(len(toolProvinces)), r.IntN(256)))
		case k < 15:
			out = append(out, fmt.Sprintf("2.0.%d.0/24", r.IntN(256)))
		case k < 16:
			out = append(out, fmt.Sprintf("3.0.%d.0/24", r.IntN(256)))
		case k < 17:
			out = append(out, fmt.Sprintf("5.%d.%d.0/24", r.IntN(256), r.IntN(256)))
		default:
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("2400:%x:%x:%x00::/56", 1+r.IntN(len(toolProvinces)), r.IntN(65536), 1+r.IntN(255))).String())
		}
	}
	return out
}

// toolV4Clients are the IPv4 ones of toolClients(n), each with a count of 1.
func toolV4Clients(n int) (v4 []string, ones []int) {
	for _, c := range toolClients(n) {
		if strings.Contains(c, ".") {
			v4, ones = append(v4, c), append(ones, 1)
		}
	}
	return v4, ones
}

type explained struct {
	Name   string
	Client struct{ Address, From, ECS, Subnet string }
	Tier   string
	Node   string
	Answer []struct{ Node, Address string }
	TTL    uint32
	Scope  *uint8
	Rcode  string
}

// TestExplainMatchesServer: for a few hundred clients, explain's winner,
// addresses, TTL and scope are what a real CoreDNS running the same
// Corefile answers.
func TestExplainMatchesServer(t *testing.T) {
	_, conf, text := toolSetup(t, toolNodes, "spread 0.1\nanswers 2")
	s := startServer(t, text)
	clients := toolClients(240)
	type job struct {
		ecs, name string
		qtype     uint16
	}
	var jobs []job
	// IPv4-mapped ECS options, which the server keeps as family 2.
	for i := range 6 {
		clients = append(clients, fmt.Sprintf("::ffff:1.%d.%d.0/120", 1+i, 7*i))
	}
	for i, c := range clients {
		j := job{ecs: c, name: "www.example.org", qtype: dns.TypeA}
		if i%5 == 0 {
			j.name = "cdn.example.org"
		}
		if i%7 == 0 {
			j.qtype = dns.TypeAAAA
		}
		jobs = append(jobs, j)
	}
	results := make([]explained, len(jobs))
	errs := make([]string, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				out, stderr, code := runTool(t, "explain", "-conf", conf, "-json", j.ecs, j.name, dns.TypeToString[j.qtype])
				if code != 0 {
					errs[i] = fmt.Sprintf("exit %d: %s", code, stderr)
					continue
				}
				if err := json.Unmarshal([]byte(out), &results[i]); err != nil {
					errs[i] = fmt.Sprintf("%v\n%s", err, out)
				}
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()

	tiers := map[string]int{}
	for i, j := range jobs {
		if errs[i] != "" {
			t.Fatalf("explain %s %s: %s", j.ecs, j.name, errs[i])
		}
		r := ask(t, s, j.name, j.qtype, j.ecs)
		x := results[i]
		var got []string
		for _, a := range x.Answer {
			got = append(got, a.Address)
		}
		if want := strings.Join(inOrder(r), ","); strings.Join(got, ",") != want {
			t.Errorf("%s %s %s: explain answers %v (node %s, tier %s), CoreDNS %s", j.ecs, j.name, dns.TypeToString[j.qtype], got, x.Node, x.Tier, want)
			continue
		}
		e := replyECS(r)
		if e == nil || x.Scope == nil || *x.Scope != e.SourceScope {
			t.Errorf("%s: explain scope %v, CoreDNS %v", j.ecs, x.Scope, e)
		}
		if len(r.Answer) > 0 && r.Answer[0].Header().Ttl != x.TTL {
			t.Errorf("%s: explain TTL %d, CoreDNS %d", j.ecs, x.TTL, r.Answer[0].Header().Ttl)
		}
		if x.Client.From != "ecs" || x.Client.ECS != netip.MustParsePrefix(j.ecs).String() {
			t.Errorf("%s: explain's client is %+v", j.ecs, x.Client)
		}
		tiers[x.Tier]++
	}
	// The clients cover the ladder, so the comparison means something.
	for _, tier := range []string{"province_isp", "province", "neighbor_isp", "region", "country", "all"} {
		if tiers[tier] == 0 {
			t.Errorf("Expected some clients on %s, got %v", tier, tiers)
		}
	}
}

// TestExplainReport reads the text report and the JSON keys, and the
// errors a user can make.
func TestExplainReport(t *testing.T) {
	_, conf, _ := toolSetup(t, toolNodes, "")

	// Jiangsu telecom: its own node is overloaded, so Shanghai or Zhejiang
	// telecom (neighbours) answer.
	out, stderr, code := runTool(t, "explain", "-conf", conf, "1.4.1.0/24")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Query     www.example.org. A",
		"Client    1.4.1.0, from the ECS option 1.4.1.0/24 (subnet 1.4.1.0/24)",
		"Location  CN/JS/- telecom AS4134",
		"geoip    CN/JS/- telecom AS4134",
		"province_isp  js-telecom (overloaded)",
		"neighbor_isp  sh-telecom, zj-telecom-a, zj-telecom-b   <- answered",
		"js-telecom    province_isp  unprobed  no: overloaded",
		"TTL 60 (stable), scope /20, winner zj-telecom-b, picked by the subnet among 3 contenders", // the spread's /20 unit
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Expected the report to contain %q, got\n%s", want, out)
		}
	}

	out, _, code = runTool(t, "explain", "-conf", conf, "-json", "1.4.1.0/24")
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); code != 0 || err != nil {
		t.Fatalf("explain -json: exit %d, %v\n%s", code, err, out)
	}
	for _, k := range []string{"client", "location", "tiers", "candidates", "node", "answer", "ttl", "ttl_reason", "scope"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("Expected key %q in %s", k, out)
		}
	}
	var x struct {
		Candidates []struct {
			ID         string
			Usable     bool
			Reason     string
			DistanceKm *float64 `json:"distance_km"`
			Terms      map[string]float64
			Score      float64
		}
	}
	json.Unmarshal([]byte(out), &x)
	for _, c := range x.Candidates {
		switch c.ID {
		case "js-telecom":
			if c.Usable || c.Reason != "overloaded" {
				t.Errorf("Expected js-telecom overloaded, got %+v", c)
			}
		case "sh-telecom":
			if !c.Usable || c.DistanceKm == nil || *c.DistanceKm < 200 || *c.DistanceKm > 300 || len(c.Terms) != 6 || c.Score <= 0 {
				t.Errorf("Expected sh-telecom usable, about 270 km away, with its terms, got %+v", c)
			}
		}
	}

	// AAAA: nodes without IPv6 are out for their family.
	out, _, _ = runTool(t, "explain", "-conf", conf, "-json", "2400:3::/56", "www.example.org", "AAAA")
	if !strings.Contains(out, `"reason": "family"`) || !strings.Contains(out, `"address": "2001:db8::1"`) {
		t.Errorf("Expected the IPv4-only nodes out by family and Beijing's IPv6 answer, got\n%s", out)
	}

	// A bare address is the resolver's own: no ECS, no scope.
	out, _, _ = runTool(t, "explain", "-conf", conf, "1.1.200.7")
	if !strings.Contains(out, "the resolver's address, no ECS") || !strings.Contains(out, "scope no ECS") ||
		!strings.Contains(out, "192.0.2.11 (bj-unicom)") {
		t.Errorf("Expected Beijing unicom for a resolver's address, got\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"1.1.1.0/24", "nope.example.org"}, "unknown name nope.example.org.: node table"},
		{[]string{"1.1.1.0/33"}, `client "1.1.1.0/33"`},
		{[]string{"1.1.1.0/24", "www.example.org", "MX"}, "gslb answers A, AAAA and HTTPS"},
	} {
		_, stderr, code := runTool(t, append([]string{"explain", "-conf", conf}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("explain %v: expected exit 1 and %q, got %d %q", tc.args, tc.want, code, stderr)
		}
	}
	if _, stderr, code := runTool(t, "explain", "-conf", conf); code != 2 || !strings.Contains(stderr, "usage") {
		t.Errorf("Expected usage and exit 2 without an address, got %d %q", code, stderr)
	}
	empty := writeFile(t, t.TempDir(), "Corefile", "example.org {\n    whoami\n}\n")
	if _, stderr, code := runTool(t, "explain", "-conf", empty, "1.1.1.0/24"); code != 1 || !strings.Contains(stderr, "no gslb block") {
		t.Errorf("Expected a Corefile without gslb to fail, got %d %q", code, stderr)
	}
}

// provinceOf is the fixture province of a client, "" when it has none.
func provinceOf(ecs string) string {
	p := netip.MustParsePrefix(ecs)
	b := p.Addr().AsSlice()
	switch {
	case p.Addr().Is4() && b[0] == 1:
		return toolProvinces[b[1]-1]
	case p.Addr().Is6() && b[0] == 0x24 && b[1] == 0:
		return toolProvinces[int(b[2])<<8+int(b[3])-1]
	case p.Addr().Is4() && b[0] == 3:
		return "CA" // in the US, like us-west
	}
	return ""
}

// nodeProvince maps the answers of toolNodes to their node and province.
var nodeProvince = map[string][2]string{
	"192.0.2.1": {"bj-telecom", "BJ"}, "192.0.2.2": {"sh-telecom", "SH"}, "192.0.2.3": {"zj-telecom-a", "ZJ"},
	"192.0.2.4": {"zj-telecom-b", "ZJ"}, "192.0.2.5": {"js-telecom", "JS"}, "192.0.2.6": {"gd-telecom", "GD"},
	"192.0.2.7": {"sc-telecom", "SC"}, "192.0.2.11": {"bj-unicom", "BJ"}, "192.0.2.12": {"sh-unicom", "SH"},
	"192.0.2.13": {"zj-unicom", "ZJ"}, "198.51.100.1": {"us-west", "CA"}, "2001:db8::1": {"bj-telecom", "BJ"},
	"2001:db8::100": {"us-west", "CA"},
}

type replayJSON struct {
	Queries            int
	Tiers              map[string]int
	CrossProvinceRatio float64 `json:"cross_province_ratio"`
	Nodes              map[string]int
	MeanDistanceKm     float64 `json:"mean_distance_km"`
	Skipped            int
	Changed            *int
	Moves              []struct{ Subnet, From, To, Tier string }
	Baseline           *struct{ Nodes map[string]int }
}

// expected counts what CoreDNS answered to each client (with its weight)
// the way replay must: node shares and the cross-province ratio.
func expected(t *testing.T, s *server, clients []string, weights []int) (nodes map[string]int, cross float64, winner map[string]string) {
	nodes, winner = map[string]int{}, map[string]string{}
	same, crossN := 0, 0
	for i, c := range clients {
		r := ask(t, s, "www.example.org", dns.TypeA, c)
		w := weights[i]
		if len(r.Answer) == 0 {
			continue
		}
		np := nodeProvince[inOrder(r)[0]]
		nodes[np[0]] += w
		winner[c] = np[0]
		if p := provinceOf(c); p != "" {
			if p == np[1] {
				same += w
			} else {
				crossN += w
			}
		}
	}
	return nodes, float64(crossN) / float64(same+crossN), winner
}

// TestReplayText replays a text file with counts, against a baseline
// table, with a policy on the cross-province ratio, and with bad lines.
func TestReplayText(t *testing.T) {
	dir, conf, text := toolSetup(t, toolNodes, "")
	s := startServer(t, text)
	clients := toolClients(300)
	var v4 []string
	for _, c := range clients {
		if strings.Contains(c, ".") {
			v4 = append(v4, c)
		}
	}
	weights := make([]int, len(v4))
	var b strings.Builder
	b.WriteString("# a day of resolvers\n")
	total := 0
	for i, c := range v4 {
		weights[i] = 1 + i%3
		total += weights[i]
		if weights[i] == 1 {
			fmt.Fprintf(&b, "%s\n", c)
		} else {
			fmt.Fprintf(&b, "%s %d\n", c, weights[i])
		}
	}
	in := writeFile(t, dir, "clients.txt", b.String())
	wantNodes, wantCross, winner := expected(t, s, v4, weights)

	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", in)
	var got replayJSON
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if got.Queries != total {
		t.Errorf("Expected %d queries, got %d", total, got.Queries)
	}
	if fmt.Sprint(got.Nodes) != fmt.Sprint(wantNodes) {
		t.Errorf("Expected node counts %v (CoreDNS's answers), got %v", wantNodes, got.Nodes)
	}
	if d := got.CrossProvinceRatio - wantCross; d > 1e-9 || d < -1e-9 || wantCross == 0 {
		t.Errorf("Expected a cross-province ratio of %v, got %v", wantCross, got.CrossProvinceRatio)
	}
	sum := 0
	for _, n := range got.Tiers {
		sum += n
	}
	if sum != total || got.Tiers["province_isp"] == 0 || got.MeanDistanceKm <= 0 {
		t.Errorf("Expected tiers adding up to %d and a mean distance, got %v, %v km", total, got.Tiers, got.MeanDistanceKm)
	}

	// The text report says the same.
	out, _, _ = runTool(t, "replay", "-conf", conf, in)
	if !strings.Contains(out, fmt.Sprintf("Queries               %d\n", total)) ||
		!strings.Contains(out, fmt.Sprintf("Cross-province ratio  %.2f%%", 100*wantCross)) {
		t.Errorf("Unexpected report:\n%s", out)
	}

	// Drop Zhejiang's nodes: the /24s they answered move, nothing else,
	// and Zhejiang's clients now cross provinces.
	var kept []string
	for _, l := range strings.Split(toolNodes, "\n") {
		if !strings.Contains(l, "id: zj-") {
			kept = append(kept, l)
		}
	}
	without := strings.Replace(strings.Join(kept, "\n"), "nodes: [bj-telecom, zj-telecom-a, zj-telecom-b, us-west]", "nodes: [bj-telecom, us-west]", 1)
	proposed := writeFile(t, dir, "proposed.yaml", without)
	base := writeFile(t, dir, "base.yaml", toolNodes)
	out, stderr, code = runTool(t, "replay", "-conf", conf, "-json", "-nodes", proposed, "-baseline-nodes", base, in)
	var diff replayJSON
	if err := json.Unmarshal([]byte(out), &diff); code != 0 || err != nil {
		t.Fatalf("replay -baseline-nodes: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	moved := map[string]bool{}
	for c, n := range winner {
		if strings.HasPrefix(n, "zj-") {
			moved[c] = true
		}
	}
	if diff.Changed == nil || *diff.Changed != len(moved) || len(moved) < 20 {
		t.Errorf("Expected the %d /24s Zhejiang's nodes answered to change node, got %v", len(moved), diff.Changed)
	}
	if len(diff.Moves) != 20 {
		t.Errorf("Expected the top 20 moves, got %d", len(diff.Moves))
	}
	for _, m := range diff.Moves {
		if !moved[m.Subnet] || m.From != winner[m.Subnet] || strings.HasPrefix(m.To, "zj-") || m.Tier == "" {
			t.Errorf("Unexpected move %+v (CoreDNS answered %s)", m, winner[m.Subnet])
		}
	}
	if diff.Nodes["zj-telecom-a"]+diff.Nodes["zj-unicom"] != 0 || diff.CrossProvinceRatio <= got.CrossProvinceRatio ||
		fmt.Sprint(diff.Baseline.Nodes) != fmt.Sprint(wantNodes) {
		t.Errorf("Expected no Zhejiang answers, more cross-province traffic than %v and the baseline's shares %v, got %+v",
			got.CrossProvinceRatio, wantNodes, diff)
	}
	out, _, _ = runTool(t, "replay", "-conf", conf, "-nodes", proposed, "-baseline-nodes", base, in)
	if !strings.Contains(out, fmt.Sprintf("%d subnets changed node", len(moved))) || !strings.Contains(out, ": zj-") {
		t.Errorf("Expected the moves in the report, got\n%s", out)
	}

	// The same table with its records in another order changes nothing:
	// queries without a name are decided for the same record on both sides.
	reordered := strings.Replace(toolNodes, "  - name: www.example.org\n", "", 1) + "  - name: www.example.org\n"
	out, _, _ = runTool(t, "replay", "-conf", conf, "-json", "-nodes", writeFile(t, dir, "reordered.yaml", reordered), "-baseline-nodes", base, in)
	var same replayJSON
	if err := json.Unmarshal([]byte(out), &same); err != nil || same.Changed == nil || *same.Changed != 0 {
		t.Errorf("Expected no change from reordering the records, got %s", out)
	}

	// A policy: the cross-province ratio must stay under a bound.
	bound := fmt.Sprint(wantCross + 0.001)
	if _, _, code := runTool(t, "replay", "-conf", conf, "-max-cross", bound, in); code != 0 {
		t.Errorf("Expected exit 0 under -max-cross %s, got %d", bound, code)
	}
	if _, stderr, code := runTool(t, "replay", "-conf", conf, "-nodes", proposed, "-max-cross", bound, in); code != 3 || !strings.Contains(stderr, "above -max-cross") {
		t.Errorf("Expected exit 3 when the proposed table crosses provinces more, got %d %q", code, stderr)
	}

	// A malformed line is reported with its line and skipped, or stops
	// the replay with -strict.
	bad := writeFile(t, dir, "bad.txt", "1.1.1.0/24\n1.1.2.0/24 many\nnot-an-address\n1.1.3.0/24 2\n")
	out, stderr, code = runTool(t, "replay", "-conf", conf, "-json", bad)
	json.Unmarshal([]byte(out), &got)
	if code != 0 || got.Queries != 3 || got.Skipped != 2 || !strings.Contains(stderr, "bad.txt:2: count \"many\"") ||
		!strings.Contains(stderr, "bad.txt:3: client \"not-an-address\"") {
		t.Errorf("Expected 3 queries and 2 lines skipped with their numbers, got exit %d, %+v, %q", code, got, stderr)
	}
	if _, stderr, code := runTool(t, "replay", "-conf", conf, "-strict", bad); code != 1 || !strings.Contains(stderr, "bad.txt:2:") {
		t.Errorf("Expected -strict to stop at line 2 with exit 1, got %d %q", code, stderr)
	}
	if _, stderr, code := runTool(t, "replay", "-conf", conf, "-name", "nope.example.org", in); code != 1 || !strings.Contains(stderr, "unknown name nope.example.org.") {
		t.Errorf("Expected an unknown -name to fail, got %d %q", code, stderr)
	}
	if _, stderr, code := runTool(t, "replay", "-conf", conf, filepath.Join(dir, "missing.txt")); code != 1 || !strings.Contains(stderr, "missing.txt") {
		t.Errorf("Expected a missing input to fail, got %d %q", code, stderr)
	}
}

// readmeLogFormat is the log format of Corefile.example, which the README
// documents.
func readmeLogFormat(t *testing.T) string {
	data, err := os.ReadFile(repoFile(t, "Corefile.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.TrimSpace(l); strings.HasPrefix(f, "log . ") {
			return strings.TrimPrefix(f, "log . ")
		}
	}
	t.Fatal("Corefile.example has no log line")
	return ""
}

// readmeLogCorefile serves example.org with gslb over city, asn and nodes,
// logging every query in the README's log format.
func readmeLogCorefile(t *testing.T, city, asn, nodes string) string {
	return fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    metadata
    log . %s
    gslb {
        geoip %s
        asn %s
        nodes %s
    }
}`, readmeLogFormat(t), city, asn, nodes)
}

// TestReplayLog replays what a real CoreDNS logged with the README's log
// format.
func TestReplayLog(t *testing.T) {
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := toolFixture(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", toolNodes)
	text := readmeLogCorefile(t, city, asn, nodes)
	conf := writeFile(t, dir, "Corefile", text)
	s := startServer(t, text)
	v4, ones := toolV4Clients(150)
	wantNodes, wantCross, _ := expected(t, s, v4, ones)
	// A query without ECS is logged with the resolver's address, which
	// has no location.
	wantNodes[nodeProvince[inOrder(ask(t, s, "www.example.org", dns.TypeA, ""))[0]][0]]++

	var lines []string
	waitFor(t, "every query logged", func() (bool, string) {
		lines = lines[:0]
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, " client=") {
				lines = append(lines, l)
			}
		}
		return len(lines) == len(v4)+1, fmt.Sprintf("%d lines", len(lines))
	})
	// As a real log has it: CoreDNS's startup lines first, and lines of
	// queries gslb did not decide (client=-).
	ask(t, s, "www.example.org", dns.TypeMX, "1.1.1.0/24")
	ask(t, s, "nope.example.org", dns.TypeA, "1.1.1.0/24")
	var other []string
	waitFor(t, "the other queries logged", func() (bool, string) {
		other = other[:0]
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, " client=-") {
				other = append(other, l)
			}
		}
		return len(other) == 2, logs.String()
	})
	startup := "maxprocs: Leaving GOMAXPROCS=2: CPU quota undefined\nexample.org.:53\nCoreDNS-1.15.0\nlinux/amd64, go1.26.8, \n"
	in := writeFile(t, dir, "coredns.log", startup+strings.Join(append(lines, other...), "\n")+"\n")
	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", "-strict", in)
	var got replayJSON
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if got.Queries != len(v4)+1 || fmt.Sprint(got.Nodes) != fmt.Sprint(wantNodes) {
		t.Errorf("Expected %d queries and %v, got %d and %v", len(v4)+1, wantNodes, got.Queries, got.Nodes)
	}
	if d := got.CrossProvinceRatio - wantCross; d > 1e-9 || d < -1e-9 {
		t.Errorf("Expected a cross-province ratio of %v, got %v", wantCross, got.CrossProvinceRatio)
	}
}

// TestReplayDnstap records the dnstap stream of a real CoreDNS into a file
// with golang-dnstap, and replays it.
func TestReplayDnstap(t *testing.T) {
	dir := t.TempDir()
	city, asn := toolFixture(t, dir)
	nodes := writeFile(t, dir, "nodes.yaml", toolNodes)
	sock := filepath.Join(dir, "tap.sock")
	file := filepath.Join(dir, "queries.dnstap")

	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	output, err := dnstap.NewFrameStreamOutputFromFilename(file)
	if err != nil {
		t.Fatal(err)
	}
	go output.RunOutputLoop()
	accepted, ready := make(chan struct{}), make(chan struct{})
	var responses atomic.Int64 // tapped answers to the test's queries
	recorded := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			recorded <- err
			return
		}
		close(accepted)
		in, err := dnstap.NewFrameStreamInputTimeout(conn, true, 5*time.Second)
		if err != nil {
			recorded <- err
			return
		}
		// Frames of the warm-up queries are dropped: they only show that the
		// stream is up. CoreDNS drops what it taps before it has connected.
		frames := make(chan []byte, 64)
		go func() {
			var once sync.Once
			for f := range frames {
				warmup, response := tapped(f)
				if warmup {
					once.Do(func() { close(ready) })
					continue
				}
				if response {
					responses.Add(1)
				}
				output.GetOutputChannel() <- f
			}
			recorded <- nil
		}()
		in.ReadInto(frames) // until CoreDNS closes the stream
		close(frames)
	}()

	text := fmt.Sprintf(`example.org:0 {
    bind 127.0.0.1
    dnstap unix://%s full
    gslb {
        geoip %s
        asn %s
        nodes %s
    }
}`, sock, city, asn, nodes)
	conf := writeFile(t, dir, "Corefile", text)
	s := startServer(t, text)
	select {
	case <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("CoreDNS did not connect to the dnstap socket")
	}
	waitFor(t, "the dnstap stream to carry a query", func() (bool, string) {
		ask(t, s, warmupName, dns.TypeTXT, "")
		select {
		case <-ready:
			return true, ""
		case <-time.After(50 * time.Millisecond):
			return false, "no frame yet"
		}
	})
	v4, ones := toolV4Clients(120)
	wantNodes, wantCross, _ := expected(t, s, v4, ones)
	// An ECS shorter than ecs_min_prefix: the server decides for the
	// resolver's address, and so must the replay. Other types are not
	// decided.
	for i := range 5 {
		r := ask(t, s, "www.example.org", dns.TypeA, fmt.Sprintf("1.%d.0.0/16", 1+i))
		wantNodes[nodeProvince[inOrder(r)[0]][0]]++
		ask(t, s, "www.example.org", dns.TypeTXT, "1.1.1.0/24")
	}
	// The tap is asynchronous: stop the server once every answer is in it.
	want := int64(len(v4) + 10)
	waitFor(t, "every answer in the dnstap stream", func() (bool, string) {
		n := responses.Load()
		return n >= want, fmt.Sprintf("%d of %d", n, want)
	})
	s.stop()
	select {
	case err := <-recorded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("The dnstap stream did not end with the server")
	}
	output.Close()

	out, stderr, code := runTool(t, "replay", "-conf", conf, "-json", file)
	var got replayJSON
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("replay: exit %d, %v: %s\n%s", code, err, stderr, out)
	}
	if got.Queries != len(v4)+5 || fmt.Sprint(got.Nodes) != fmt.Sprint(wantNodes) {
		t.Errorf("Expected %d queries and %v, got %d and %v", len(v4)+5, wantNodes, got.Queries, got.Nodes)
	}
	if d := got.CrossProvinceRatio - wantCross; d > 1e-9 || d < -1e-9 {
		t.Errorf("Expected a cross-province ratio of %v, got %v", wantCross, got.CrossProvinceRatio)
	}
	if !strings.Contains(out, `"other_types": 5`) {
		t.Errorf("Expected the 5 TXT queries counted apart, got %s", out)
	}

	// A file cut inside a frame is an error, not a silent short count. (Cut
	// between frames, it reads as a recording that stopped there.)
	data, _ := os.ReadFile(file)
	cut := writeFile(t, dir, "cut.dnstap", string(data[:len(data)-3]))
	if _, stderr, code := runTool(t, "replay", "-conf", conf, cut); code != 1 || !strings.Contains(stderr, "cut.dnstap") {
		t.Errorf("Expected a truncated dnstap file to fail, got %d %q", code, stderr)
	}
}

// TestCheck: ok for a good block; the server's own error for a bad one.
func TestCheck(t *testing.T) {
	dir, conf, text := toolSetup(t, toolNodes, "")
	if out, stderr, code := runTool(t, "check", "-conf", conf); code != 0 || out != "ok\n" {
		t.Fatalf("Expected ok, got %d %q %q", code, out, stderr)
	}
	for _, tc := range []struct {
		name, corefile string
	}{
		{"option", strings.Replace(text, "gslb {", "gslb {\n        ttl soon", 1)},
		{"nodes", strings.Replace(text, "nodes.yaml", "broken.yaml", 1)},
		{"missing", strings.Replace(text, "nodes.yaml", "missing.yaml", 1)},
		// Two blocks for one zone and port: the server's setup passes,
		// building its servers fails.
		{"twice", text + "\n" + text},
	} {
		writeFile(t, dir, "broken.yaml", strings.Replace(toolNodes, "load: 0.95", "load: 2", 1))
		bad := writeFile(t, dir, "Corefile."+tc.name, tc.corefile)
		_, stderr, code := runTool(t, "check", "-conf", bad)
		// The server, started from the same file, fails with the same words.
		mu.Lock()
		_, err := startFile(bad)
		mu.Unlock()
		if err == nil {
			t.Fatalf("%s: CoreDNS started with a bad Corefile", tc.name)
		}
		if code != 1 || strings.TrimSpace(stderr) != err.Error() {
			t.Errorf("%s: expected exit 1 and the server's error\n%q, got %d\n%q", tc.name, err.Error(), code, stderr)
		}
	}
	empty := writeFile(t, dir, "Corefile.empty", "example.org:0 {\n    whoami\n}\n")
	if _, stderr, code := runTool(t, "check", "-conf", empty); code != 1 || !strings.Contains(stderr, "no gslb block") {
		t.Errorf("Expected a Corefile without gslb to fail, got %d %q", code, stderr)
	}
}

// inOrder is r's addresses in the answer's order: the winner first.
func inOrder(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		}
	}
	return out
}

// fileInput is a Corefile read from a file, so that errors name it.
type fileInput struct {
	body []byte
	path string
}

func (i fileInput) Body() []byte       { return i.body }
func (i fileInput) Path() string       { return i.path }
func (i fileInput) ServerType() string { return "dns" }

// startFile starts CoreDNS from the Corefile at path and stops it again;
// it returns the start's error. Callers hold mu.
func startFile(path string) (*caddy.Instance, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	caddy.Quiet, dnsserver.Quiet = true, true
	inst, err := caddy.Start(fileInput{data, path})
	if err == nil {
		inst.Stop()
	}
	return inst, err
}

const warmupName = "warmup.example.org"

// tapped says whether a dnstap frame is of a warm-up query, and whether
// it is an answer.
func tapped(frame []byte) (warmup, response bool) {
	var d dnstap.Dnstap
	if proto.Unmarshal(frame, &d) != nil || d.Message == nil {
		return false, false
	}
	raw := d.Message.QueryMessage
	if response = d.Message.GetType() == dnstap.Message_CLIENT_RESPONSE; response {
		raw = d.Message.ResponseMessage
	}
	var m dns.Msg
	if m.Unpack(raw) != nil || len(m.Question) == 0 {
		return false, response
	}
	return strings.EqualFold(m.Question[0].Name, warmupName+"."), response
}

// TestCheckBadStateFile: the server starts with an admin state file that
// does not load (and logs an Error); check says ok too, with a WARNING on
// stderr naming the file and the line, and exits 0.
func TestCheckBadStateFile(t *testing.T) {
	dir, _, text := toolSetup(t, toolNodes, "")
	state := writeFile(t, dir, "state.yaml", "drains:\n  - node: x\n    since: yesterday\n")
	conf := writeFile(t, dir, "Corefile.state", strings.Replace(text, "gslb {",
		"gslb {\n        admin "+testsupport.FreeAddr(t)+" {\n            state "+state+"\n        }", 1))
	out, stderr, code := runTool(t, "check", "-conf", conf)
	if code != 0 || out != "ok\n" {
		t.Fatalf("Expected ok and exit 0 (the server starts), got %d %q %q", code, out, stderr)
	}
	if !strings.HasPrefix(stderr, "WARNING: ") || !strings.Contains(stderr, state) || !strings.Contains(stderr, "line 3") {
		t.Errorf("Expected a WARNING naming %s and its line, got %q", state, stderr)
	}
}
