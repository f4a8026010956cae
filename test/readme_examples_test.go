package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gslbdns/gslb/edgeagent"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
	"go.yaml.in/yaml/v3"
)

// TestREADMEExamples checks every fenced block of README.md as a reader
// would use it. Each block is claimed by exactly one check (or by the
// explicit skip list, with the reason) and named by its README line.
//
// How an example's world is built (the rules the README's text implies):
//   - The working directory W holds copies of Corefile.example and
//     nodes.example.yaml, and demo/ with the demo databases built from
//     demo/demo.csv by the project's generator (geo/mmdbgen), so relative
//     paths resolve as in a clone.
//   - Absolute paths live under W: /etc/coredns/nodes.yaml is the demo
//     table, /etc/coredns/db.example.org a small zone file,
//     /etc/coredns/gslb.token a 0600 token (`openssl rand -hex 16`),
//     /var/lib/GeoIP/GeoLite2-{City,ASN}.mmdb the demo databases,
//     /var/lib/coredns/ an empty directory.
//   - Every fixed port (1053, 9153, 8181, 9154; 53 for a server block
//     without one, which also gets `bind 127.0.0.1`) becomes a free
//     loopback port; REDIS_PASSWORD and GEO_API_KEY are set.
//   - A corefile block that is not a server block (it starts with a gslb
//     option) goes into Corefile.example's gslb block.
//   - A txt block starting with "$ " is a transcript: commands run in W and
//     their output is compared; "  ..." in an output stands for any lines.
//   - The CI replay line runs with Corefile.example as Corefile, the demo
//     table as nodes.yaml and nodes-new.yaml, and the quick start's log as
//     yesterday.log.
//   - dig is run by an equivalent built on miekg/dns (dig need not be
//     installed): @SERVER, -p, NAME, TYPE, +subnet=, +short; any other
//     option fails. curl lines run in bash with the real curl.
func TestREADMEExamples(t *testing.T) {
	blocks := readmeBlocks(t)
	r := newReadmeRun(t)
	skipsUsed := map[string]bool{}
	for _, b := range blocks {
		name := fmt.Sprintf("line%d_%s", b.line, b.kind)
		if reason, key := readmeSkipped(b); reason != "" {
			skipsUsed[key] = true
			t.Logf("README line %d (%s): not run: %s", b.line, b.kind, reason)
			continue
		}
		c := r.checkFor(b)
		if c == nil {
			t.Errorf("README line %d: a %s block that no check covers (first line %q): add a check or a skip with its reason", b.line, b.kind, b.first())
			continue
		}
		t.Run(name, func(t *testing.T) { c(t, b) })
	}
	// dig options the prose names are real ones (+full is not).
	for _, m := range regexp.MustCompile("`\\+([a-z]+)").FindAllStringSubmatch(readmeText(t), -1) {
		if m[1] != "short" && m[1] != "subnet" {
			t.Errorf("README names the dig option +%s, which is not one (dig's manual: +short, +subnet, ...)", m[1])
		}
	}
	for key := range readmeSkips {
		if !skipsUsed[key] {
			t.Errorf("The skip list names a block the README no longer has: %q", key)
		}
	}
	for key := range readmeSkipLines {
		if !r.skippedLines[key] {
			t.Errorf("The skip list names a command the README no longer has: %q", key)
		}
	}
}

// readmeSkips: the blocks that cannot run here, by their first line.
var readmeSkips = map[string]string{}

// readmeSkipLines: single lines of a checked block that cannot run here.
var readmeSkipLines = map[string]string{
	"make test": "is what runs this test",
	"git clone --depth 1 --branch v1.15.0 https://github.com/coredns/coredns && cd coredns": "fetches CoreDNS from the network; test/plugincfg.sh copies v1.15.0's source from the module cache instead",
	"go mod tidy": "offline it wants the test dependencies of every CoreDNS package, which the module cache lacks; test/plugincfg.sh builds with -mod=mod instead",
}

func readmeSkipped(b readmeBlock) (reason, key string) {
	if r, ok := readmeSkips[b.first()]; ok {
		return r, b.first()
	}
	if (b.kind == "txt" || b.kind == "text") && b.section == "Architecture" {
		return "a diagram of the code", ""
	}
	return "", ""
}

type readmeBlock struct {
	line    int // README line of the block's first content line
	kind    string
	section string // the enclosing "## " heading
	lines   []string
}

func (b readmeBlock) first() string {
	if len(b.lines) == 0 {
		return ""
	}
	return b.lines[0]
}

func (b readmeBlock) text() string { return strings.Join(b.lines, "\n") + "\n" }

// readmeBlocks returns README.md's fenced blocks (~~~ KIND or ``` KIND).
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	var cur *readmeBlock
	fence, section := "", ""
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur != nil && strings.TrimSpace(l) == fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		case strings.HasPrefix(l, "~~~") || strings.HasPrefix(l, "```"):
			fence = l[:3]
			kind := strings.TrimSpace(l[3:])
			if kind == "" {
				t.Errorf("README line %d: a fenced block without a kind", i+1)
			}
			cur = &readmeBlock{line: i + 2, kind: kind, section: section}
		case strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
		}
	}
	if cur != nil {
		t.Fatalf("README line %d: a fenced block is not closed", cur.line-1)
	}
	if len(out) < 10 {
		t.Fatalf("Only %d fenced blocks found in README.md", len(out))
	}
	return out
}

// readmeRun is the shared world of the checks: W, the tools, the servers.
type readmeRun struct {
	t     *testing.T
	w     string
	token string
	demo  *readmeServer // Corefile.example, started by the quick start
	// the admin block, paths mapped, that the curl lines run against
	adminFragment string
	// the feed block, paths mapped, that the feed's curl lines run against
	feedFragment string
	skippedLines map[string]bool // the readmeSkipLines met
}

func newReadmeRun(t *testing.T) *readmeRun {
	w := t.TempDir()
	r := &readmeRun{t: t, w: w, skippedLines: map[string]bool{}, token: "0123456789abcdef" + "fedcba9876543210"}
	for _, f := range []string{"Corefile.example", "nodes.example.yaml"} {
		data, err := os.ReadFile(repoFile(t, f))
		if err != nil {
			t.Fatal(err)
		}
		r.write(f, string(data), 0o644)
	}
	cities, asns, err := mmdbgen.ReadCSV(repoFile(t, "demo/demo.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"demo", "var/lib/GeoIP", "etc/coredns", "var/lib/coredns"} {
		if err := os.MkdirAll(filepath.Join(w, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range [][2]string{{"demo/gslb-demo-City.mmdb", "demo/gslb-demo-ASN.mmdb"}, {"var/lib/GeoIP/GeoLite2-City.mmdb", "var/lib/GeoIP/GeoLite2-ASN.mmdb"}} {
		if err := mmdbgen.WriteCity(filepath.Join(w, p[0]), cities); err != nil {
			t.Fatal(err)
		}
		if err := mmdbgen.WriteASN(filepath.Join(w, p[1]), asns); err != nil {
			t.Fatal(err)
		}
	}
	r.write("etc/coredns/nodes.yaml", r.read("nodes.example.yaml"), 0o644)
	r.write("etc/coredns/db.example.org", `$ORIGIN example.org.
@	3600 IN SOA ns1.example.org. hostmaster.example.org. 2026120101 14400 3600 1209600 300
	3600 IN NS ns1.example.org.
ns1	3600 IN A 192.0.2.53
mail	3600 IN A 192.0.2.25
`, 0o644)
	r.write("etc/coredns/gslb.token", r.token+"\n", 0o600)
	// The DNSSEC example's key pair.
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: "example.org.", Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	priv, err := k.Generate(256)
	if err != nil {
		t.Fatal(err)
	}
	r.write("etc/coredns/Kexample.org.+013+24680.key", k.String()+"\n", 0o644)
	r.write("etc/coredns/Kexample.org.+013+24680.private", k.PrivateKeyString(priv), 0o600)
	t.Setenv("REDIS_PASSWORD", "readme-example-password")
	t.Setenv("GEO_API_KEY", "readme-example-key")
	return r
}

// write and read work on W; they report to the whole test (Error, not
// Fatal: they also run in the checks' goroutines), and what follows fails.
func (r *readmeRun) write(name, data string, mode os.FileMode) string {
	p := filepath.Join(r.w, name)
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		r.t.Error(err)
	}
	return p
}

func (r *readmeRun) read(name string) string {
	data, err := os.ReadFile(filepath.Join(r.w, name))
	if err != nil {
		r.t.Error(err)
	}
	return string(data)
}

// checkFor returns the check that claims b, or nil.
func (r *readmeRun) checkFor(b readmeBlock) func(*testing.T, readmeBlock) {
	first := b.first()
	switch {
	case b.kind == "sh" && strings.HasPrefix(first, "go run ./cmd/coredns -conf Corefile.example"):
		return r.checkQuickStart
	case b.kind == "sh" && strings.HasPrefix(first, "$ dig "):
		return r.checkDig
	case b.kind == "txt" && strings.HasPrefix(first, "[INFO] 127.0.0.1 "):
		return r.checkQueryLog
	case b.kind == "txt" && strings.HasPrefix(first, "[INFO] plugin/gslb: Loaded "):
		return r.checkLoadedLine
	case b.kind == "sh" && strings.HasPrefix(first, "cat > quality.yaml <<"),
		b.kind == "yaml" && first == "quality:":
		return r.checkQuality
	case b.kind == "json":
		return r.checkJSON
	case b.kind == "yaml" && first == "overrides:":
		return r.checkOverrides
	case b.kind == "yaml" && first == "nodes:":
		return r.checkNodeTable
	case b.kind == "corefile" && strings.HasPrefix(first, "admin "):
		return r.checkAdminFragment
	case b.kind == "sh" && strings.Contains(b.text(), "dnssec-keygen "):
		return r.checkKeygen
	case b.kind == "corefile" && strings.HasPrefix(first, "feed {"):
		return r.checkFeedFragment
	case b.kind == "corefile" && strings.HasPrefix(first, "canary "):
		return r.checkCanaryFragment
	case b.kind == "nginx":
		return r.checkNginx
	case b.kind == "sh" && strings.HasPrefix(first, "gslb feed "):
		return r.checkFeedAgent
	case b.kind == "sh" && strings.Contains(b.text(), "/v1/feed"):
		return r.checkFeedCurl
	case b.kind == "sh" && strings.Contains(b.text(), "ACL SETUSER"):
		return r.checkFleetACL
	case b.kind == "sh" && strings.Contains(b.text(), "curl "):
		return r.checkAdminCurl
	case b.kind == "corefile":
		return r.checkServerBlock
	case b.kind == "txt" && strings.HasPrefix(first, "gslb [ZONES...] {"):
		return r.checkSyntax
	case b.kind == "txt" && strings.HasPrefix(first, "$ "):
		return r.checkTranscript
	case b.kind == "sh" && strings.HasPrefix(first, "gslb replay "):
		return r.checkReplayCI
	case b.kind == "sh" && strings.HasPrefix(first, "git clone ") && strings.Contains(b.text(), "plugin.cfg"):
		return r.checkPluginCfg
	}
	return nil
}

// checkQuickStart starts Corefile.example as `go run ./cmd/coredns` would
// (the built binary, in W) and checks what its comments say.
func (r *readmeRun) checkQuickStart(t *testing.T, b readmeBlock) {
	for i, l := range b.lines {
		cmd, comment, _ := strings.Cut(l, "#")
		cmd = strings.TrimSpace(cmd)
		if reason, ok := readmeSkipLines[cmd]; ok {
			r.skippedLines[cmd] = true
			t.Logf("README line %d: %q not run: %s", b.line+i, cmd, reason)
			continue
		}
		if cmd != "go run ./cmd/coredns -conf Corefile.example" {
			t.Errorf("README line %d: %q: no check runs this command", b.line+i, cmd)
			continue
		}
		cf := r.read("Corefile.example")
		if strings.Contains(comment, "127.0.0.1:1053") && (!strings.Contains(cf, "example.org:1053 {") || !strings.Contains(cf, "bind 127.0.0.1")) {
			t.Errorf("README line %d says %q, but Corefile.example does not serve there:\n%s", b.line+i, comment, cf)
		}
		// The later blocks (dig, the log) ask this server: it lives as long as the whole test.
		r.demo = startReadmeServer(t, r.t, r, "Corefile.example", cf)
	}
}

// checkDig runs each "$ dig" line against the quick start's server and
// compares the lines under it.
func (r *readmeRun) checkDig(t *testing.T, b readmeBlock) {
	if r.demo == nil {
		t.Fatalf("README line %d: the quick start's server did not start", b.line)
	}
	for _, c := range transcript(b) {
		if !strings.HasPrefix(c.cmd, "dig ") {
			t.Errorf("README line %d: %q is not a dig command", c.line, c.cmd)
			continue
		}
		got, err := r.demo.dig(c.cmd)
		if err != nil {
			t.Errorf("README line %d: %s: %v", c.line, c.cmd, err)
			continue
		}
		if msg := compareOutput(c.out, got); msg != "" {
			t.Errorf("README line %d: %s: %s", c.line, c.cmd, msg)
		}
	}
}

// checkQueryLog: every line is what the quick start's server logged for the
// dig lines (after the [INFO] prefix, whatever the date in front of it).
func (r *readmeRun) checkQueryLog(t *testing.T, b readmeBlock) {
	if r.demo == nil {
		t.Fatalf("README line %d: the quick start's server did not start", b.line)
	}
	for i, l := range b.lines {
		r.demo.waitLine(t, fmt.Sprintf("README line %d", b.line+i), l)
	}
	// replay reads this log, as "gslb replay" says.
	log := r.write("quickstart.log", b.text(), 0o644)
	out, code := r.toolJSON(t, "replay", "-json", "-conf", "Corefile.example", log)
	var rep struct {
		Queries int `json:"queries"`
		Skipped int `json:"skipped"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Queries != len(b.lines) || rep.Skipped != 0 {
		t.Errorf("README line %d: gslb replay of these log lines: status %d, want %d queries and none skipped:\n%s", b.line, code, len(b.lines), out)
	}
}

// checkLoadedLine starts Corefile.example with the README's overrides
// example as overrides.yaml (the line names one) and compares the line.
func (r *readmeRun) checkLoadedLine(t *testing.T, b readmeBlock) {
	if _, err := os.Stat(filepath.Join(r.w, "overrides.yaml")); err != nil {
		t.Fatalf("README line %d: no overrides example was written before this block", b.line)
	}
	s := startReadmeServer(t, t, r, "Corefile.loaded", r.withGslbLines("overrides overrides.yaml"))
	for i, l := range b.lines {
		s.waitLine(t, fmt.Sprintf("README line %d", b.line+i), l)
	}
}

// checkQuality runs the block in W (or writes it, as YAML) and checks that
// the row counts as the text says: the hz-telecom quality term for a
// Zhejiang telecom client (202.101.172.0/24 in the demo) is
// 1/(1 + rtt_ms/50) × (1 − loss), so the row is fresh.
func (r *readmeRun) checkQuality(t *testing.T, b readmeBlock) {
	if b.kind == "yaml" {
		r.write("quality.yaml", b.text(), 0o644)
	} else if out, err := r.bash(b.text()); err != nil {
		t.Fatalf("README line %d: %v\n%s", b.line, err, out)
	}
	var q struct {
		Quality []struct {
			Node string  `yaml:"node"`
			RTT  float64 `yaml:"rtt_ms"`
			Loss float64 `yaml:"loss"`
		} `yaml:"quality"`
	}
	if err := yaml.Unmarshal([]byte(r.read("quality.yaml")), &q); err != nil || len(q.Quality) != 1 {
		t.Fatalf("README line %d: the written quality.yaml: %v", b.line, err)
	}
	row := q.Quality[0]
	r.write("Corefile.quality", r.withGslbLines("quality quality.yaml", "weights 0.4 0.2 0.1 0.3"), 0o644)
	ex := r.explain(t, "Corefile.quality", "202.101.172.0/24")
	c, ok := ex.candidate(row.Node)
	if !ok || c.RTT == nil || *c.RTT != row.RTT {
		t.Fatalf("README line %d: the row's rtt is not used (stale or unmatched): %+v", b.line, c)
	}
	if want := 1 / (1 + row.RTT/50) * (1 - row.Loss); math.Abs(c.Terms["quality"]-want) > 1e-3 {
		t.Errorf("README line %d: quality term %v, want %v", b.line, c.Terms["quality"], want)
	}
	// The text's worked example: 0.3 × that term.
	if want := fmt.Sprintf("= %.2f`", 0.3*c.Terms["quality"]); !strings.Contains(readmeText(t), want) {
		t.Errorf("README: the quality paragraph's result should read %q", want)
	}
}

// checkJSON: the online API's answer, served by a real HTTP server as the
// block's `online` URL, places its network's client (explain -live).
func (r *readmeRun) checkJSON(t *testing.T, b readmeBlock) {
	var v struct {
		Network  string `json:"network"`
		Province string `json:"province"`
	}
	if err := json.Unmarshal([]byte(b.text()), &v); err != nil {
		t.Fatalf("README line %d: not JSON: %v", b.line, err)
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, b.text())
	}))
	defer api.Close()
	r.write("Corefile.online", r.withGslbLines("online "+api.URL+"/v1/{ip}"), 0o644)
	out, code := r.toolJSON(t, "explain", "-json", "-live", "-conf", "Corefile.online", v.Network)
	var e explainOut
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil || e.Location.Source != "online" || e.Location.Province != v.Province {
		t.Errorf("README line %d: served as the online API's answer for %s, it is not used (status %d):\n%s", b.line, v.Network, code, out)
	}
}

// checkOverrides: the file passes gslb check with the demo, and each entry
// does what it says in explain: a location entry places its cidr, a nodes
// entry pins it.
func (r *readmeRun) checkOverrides(t *testing.T, b readmeBlock) {
	r.write("overrides.yaml", b.text(), 0o644)
	r.write("Corefile.overrides", r.withGslbLines("overrides overrides.yaml"), 0o644)
	if out, code := r.tool(t, "check", "-conf", "Corefile.overrides"); code != 0 {
		t.Fatalf("README line %d: gslb check: %s", b.line, out)
	}
	var f struct {
		Overrides []struct {
			CIDR     string            `yaml:"cidr"`
			Location map[string]string `yaml:"location"`
			Nodes    []string          `yaml:"nodes"`
		} `yaml:"overrides"`
	}
	if err := yaml.Unmarshal([]byte(b.text()), &f); err != nil {
		t.Fatal(err)
	}
	// The text's error for a carrier typo in the first entry.
	typo := strings.Replace(b.text(), "isp: telecom}", "isp: telcom}", 1)
	r.write("overrides.typo.yaml", typo, 0o644)
	r.write("Corefile.typo", r.withGslbLines("overrides overrides.typo.yaml"), 0o644)
	out, _ := r.tool(t, "check", "-conf", "Corefile.typo")
	m := regexp.MustCompile(`line \d+: overrides\[0\]: field location.isp: unknown carrier "telcom" \(did you mean telecom\?\)`).FindString(out)
	if m == "" || !strings.Contains(strings.Join(strings.Fields(readmeText(t)), " "), m) {
		t.Errorf("README line %d: with isp: telcom in the first entry gslb check says %q; the text should quote %q", b.line, out, m)
	}
	for i, e := range f.Overrides {
		p, err := netip.ParsePrefix(e.CIDR)
		if err != nil {
			t.Errorf("README line %d: entry %d: %v", b.line, i, err)
			continue
		}
		client := netip.PrefixFrom(p.Addr(), max(p.Bits(), 24)).String()
		ex := r.explain(t, "Corefile.overrides", client)
		if e.Location != nil && (ex.Location.Source != "override" || ex.Location.Province != e.Location["province"]) {
			t.Errorf("README line %d: entry %d (%s): location from %q in %q, want the override's %q", b.line, i, e.CIDR, ex.Location.Source, ex.Location.Province, e.Location["province"])
		}
		if e.Nodes != nil && (ex.Tier != "override" || !contains(e.Nodes, ex.Node)) {
			t.Errorf("README line %d: entry %d (%s): answered %s at tier %s, want a pin to %v", b.line, i, e.CIDR, ex.Node, ex.Tier, e.Nodes)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkNodeTable: the table as Corefile.example's node table passes gslb check.
func (r *readmeRun) checkNodeTable(t *testing.T, b readmeBlock) {
	r.write("nodes.readme.yaml", b.text(), 0o644)
	cf := strings.Replace(r.read("Corefile.example"), "nodes nodes.example.yaml", "nodes nodes.readme.yaml", 1)
	r.write("Corefile.nodes", cf, 0o644)
	if out, code := r.tool(t, "check", "-conf", "Corefile.nodes"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("README line %d: gslb check of the node table: status %d:\n%s", b.line, code, out)
	}
}

// checkAdminFragment: the admin block in Corefile.example's gslb block
// passes gslb check; the curl block runs against it.
func (r *readmeRun) checkAdminFragment(t *testing.T, b readmeBlock) {
	r.adminFragment = r.mapPaths(b.text())
	r.write("Corefile.admin", r.withGslbLines(r.adminFragment), 0o644)
	if out, code := r.tool(t, "check", "-conf", "Corefile.admin"); code != 0 {
		t.Errorf("README line %d: gslb check: status %d:\n%s", b.line, code, out)
	}
}

// checkFeedFragment: the feed block, with the admin block before it and a
// token in each of its token files, passes gslb check.
func (r *readmeRun) checkFeedFragment(t *testing.T, b readmeBlock) {
	if r.adminFragment == "" {
		t.Fatalf("README line %d: no admin block came before the feed block", b.line)
	}
	r.feedFragment = r.mapPaths(b.text())
	for i, m := range regexp.MustCompile(`token_file (\S+)`).FindAllStringSubmatch(r.feedFragment, -1) {
		r.write(strings.TrimPrefix(m[1], r.w+"/"), fmt.Sprintf("feed%dtoken-9f8e7d6c5b4a3210", i), 0o600)
	}
	r.write("Corefile.feed", r.withGslbLines(r.adminFragment, r.feedFragment), 0o644)
	if out, code := r.tool(t, "check", "-conf", "Corefile.feed"); code != 0 {
		t.Errorf("README line %d: gslb check: status %d:\n%s", b.line, code, out)
	}
}

// checkCanaryFragment: the canary block, with the admin block before it,
// a feed block and the demo table as the candidate, passes gslb check.
func (r *readmeRun) checkCanaryFragment(t *testing.T, b readmeBlock) {
	if r.adminFragment == "" {
		t.Fatalf("README line %d: no admin block came before the canary block", b.line)
	}
	file := strings.Fields(b.lines[0])[1]
	r.write(file, r.read("etc/coredns/nodes.yaml"), 0o644)
	tok := r.write("canary-feed.token", "canary-feed-token-0f1e2d3c4b5a6978", 0o600)
	feedBlock := "feed {\n    source edge {\n        token_file " + tok + "\n        nodes *\n    }\n}"
	r.write("Corefile.canary", r.withGslbLines(r.adminFragment, feedBlock, r.mapPaths(b.text())), 0o644)
	if out, code := r.tool(t, "check", "-conf", "Corefile.canary"); code != 0 {
		t.Errorf("README line %d: gslb check: status %d:\n%s", b.line, code, out)
	}
}

// checkFeedCurl runs the block in bash against Corefile.example with the
// admin and feed blocks above: every curl must get a 2xx JSON answer, and
// the POST must have its row accepted.
func (r *readmeRun) checkFeedCurl(t *testing.T, b readmeBlock) {
	if r.feedFragment == "" {
		t.Fatalf("README line %d: no feed block came before the curl lines", b.line)
	}
	s := startReadmeServer(t, t, r, "Corefile.feed", r.withGslbLines(r.adminFragment, r.feedFragment))
	script := strings.ReplaceAll(s.mapPorts(r.mapPaths(b.text())), "curl ", "curl --fail-with-body -sS --max-time 10 ")
	out, err := r.bash(script)
	if err != nil {
		t.Fatalf("README line %d: %v\n%s", b.line, err, out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var answers []map[string]any
	for dec.More() {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("README line %d: not JSON answers: %v\n%s", b.line, err, out)
		}
		answers = append(answers, v)
	}
	if len(answers) != 2 || answers[0]["accepted"] != 1.0 || answers[1]["cells"] == nil {
		t.Errorf("README line %d: want the row accepted, then the cells:\n%s", b.line, out)
	}
}

// checkNginx: the log_format lines are the agent's, and nginx -t takes
// them in an http block.
func (r *readmeRun) checkNginx(t *testing.T, b readmeBlock) {
	text := strings.ReplaceAll(b.text(), "/var/log/nginx/", r.w+"/var/log/nginx/")
	for _, want := range []string{edgeagent.LogFormatJSON, edgeagent.LogFormatCombined} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("README line %d: the agent's log_format line is missing:\n%s", b.line, want)
		}
	}
	os.MkdirAll(filepath.Join(r.w, "var/log/nginx"), 0o755)
	conf := r.write("nginx-readme.conf", fmt.Sprintf("pid %s/nginx.pid;\nerror_log %s/nginx-error.log;\nevents {}\nhttp {\n%s}\n", r.w, r.w, text), 0o644)
	if out, err := exec.Command(nginxPath(t), "-t", "-c", conf, "-p", r.w).CombinedOutput(); err != nil {
		t.Errorf("README line %d: nginx -t: %v\n%s", b.line, err, out)
	}
}

// checkFeedAgent runs the agent's command line against Corefile.example
// with the admin and feed blocks above, appends a line of the JSON
// format to the log, and waits for the summary line that delivered it.
func (r *readmeRun) checkFeedAgent(t *testing.T, b readmeBlock) {
	if r.feedFragment == "" {
		t.Fatalf("README line %d: no feed block came before the agent", b.line)
	}
	s := startReadmeServer(t, t, r, "Corefile.feed", r.withGslbLines(r.adminFragment, r.feedFragment))
	logDir := filepath.Join(r.w, "var/log/nginx")
	os.MkdirAll(logDir, 0o755)
	logFile := filepath.Join(logDir, "access.log")
	os.Remove(logFile + ".gslb-offset")
	r.write("var/log/nginx/access.log", "", 0o644)
	line := strings.ReplaceAll(s.mapPorts(r.mapPaths(b.first())), "/var/log/nginx/", logDir+"/")
	args := strings.Fields(line)
	if args[0] != "gslb" {
		t.Fatalf("README line %d: %q is not a gslb command", b.line, line)
	}
	cmd := exec.Command(gslbTool(t), args[1:]...)
	out := &testsupport.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	waitFor(t, "the agent's offset file", func() (bool, string) {
		_, err := os.Stat(logFile + ".gslb-offset")
		return err == nil, out.String()
	})
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"remote_addr":"202.101.172.35","status":"200","body_bytes_sent":"512","request_time":"0.040","upstream_response_time":"0.038","upstream_cache_status":"MISS"}`)
	f.Close()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "delivered 1 batches (1 rows)") {
		if time.Now().After(deadline) {
			t.Fatalf("README line %d: no summary line delivering the row within 60s:\n%s", b.line, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkAdminCurl runs each curl line, in bash with the block's variable
// lines before it, against Corefile.example with the admin block above and
// the canary line of "Canary rollout" (candidate.yaml, a copy of the demo
// table). Each must get a 2xx answer with a JSON body, and 401 without the
// token.
func (r *readmeRun) checkAdminCurl(t *testing.T, b readmeBlock) {
	if r.adminFragment == "" {
		t.Fatalf("README line %d: no admin block came before the curl lines", b.line)
	}
	r.write("candidate.yaml", r.read("nodes.example.yaml"), 0o644)
	s := startReadmeServer(t, t, r, "Corefile.admin", r.withGslbLines(r.adminFragment, "canary candidate.yaml 1 { rollback_cross 0.02 }"))
	var prelude []string
	pins := map[netip.Prefix]bool{}
	for i, l := range b.lines {
		cmd, _, _ := strings.Cut(l, "   #")
		cmd = strings.TrimSpace(cmd)
		if cmd == "" {
			continue
		}
		mapped := s.mapPorts(r.mapPaths(cmd))
		if !strings.HasPrefix(cmd, "curl ") {
			prelude = append(prelude, mapped)
			continue
		}
		script := strings.Join(prelude, "\n") + "\n" + strings.Replace(mapped, "curl ", "curl --fail-with-body -sS --max-time 10 ", 1)
		out, err := r.bash(script)
		if err != nil {
			t.Errorf("README line %d: %s: %v\n%s", b.line+i, cmd, err, out)
			continue
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("README line %d: %s: not a JSON answer:\n%s", b.line+i, cmd, out)
		}
		r.trackPins(t, b.line+i, cmd, out, pins)
		// "every request needs Authorization: Bearer TOKEN, reads too"
		bare := strings.Replace(strings.Replace(mapped, ` -H "$T"`, "", 1), "curl ", `curl -s -o /dev/null -w '%{http_code}' `, 1)
		if out, _ := r.bash(bare); out != "401" {
			t.Errorf("README line %d: without the token: status %s, want 401", b.line+i, out)
		}
	}
}

// checkKeygen runs the key commands as written (in W's /etc/coredns),
// serves the demo signed with the two keys they made, and checks that the
// startup line names them and that delv, with the printed DS as its only
// trust anchor, fully validates an answer.
func (r *readmeRun) checkKeygen(t *testing.T, b readmeBlock) {
	out, err := r.bash(r.mapPaths(b.text()) + `echo "keys $KSK $ZSK"` + "\n")
	if err != nil {
		t.Fatalf("README line %d: %v\n%s", b.line, err, out)
	}
	var ksk, zsk string
	var ds []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "keys":
			ksk, zsk = f[1], f[2]
		case len(f) == 7 && f[0] == "example.org." && f[1] == "IN" && f[2] == "DS":
			ds = f[3:]
		}
	}
	if ksk == "" || zsk == "" || ds == nil {
		t.Fatalf("README line %d: expected two key names and a DS line, got:\n%s", b.line, out)
	}
	tag := func(base string) string { return strings.TrimLeft(base[strings.LastIndex(base, "+")+1:], "0") }
	cf := r.mapPaths(r.withGslbLines("dnssec /etc/coredns/" + ksk + " /etc/coredns/" + zsk))
	s := startReadmeServer(t, t, r, "Corefile.keygen", cf)
	s.waitLine(t, "the keys' startup line", fmt.Sprintf("DNSSEC for example.org.: signing with key %s (KSK, ECDSAP256SHA256), key %s (ZSK, ECDSAP256SHA256)", tag(ksk), tag(zsk)))
	if ds[0] != tag(ksk) || ds[2] != "2" {
		t.Errorf("README line %d: expected the KSK's SHA-256 DS, got %v", b.line, ds)
	}
	anchors := r.write("anchors.conf", fmt.Sprintf("trust-anchors {\n    example.org. static-ds %s %s %s \"%s\";\n};\n", ds[0], ds[1], ds[2], ds[3]), 0o644)
	got := runDNSTool(t, dnsTool(t, "delv"), "@127.0.0.1", "-p", s.ports["1053"], "-4", "-a", anchors, "+root=example.org.", "+nosplit", "www.example.org.", "A")
	if !strings.Contains(got, "; fully validated\n") || !strings.Contains(got, "\tRRSIG\tA 13 ") {
		t.Errorf("README line %d: delv with the DS as trust anchor: want a fully validated, signed answer:\n%s", b.line, got)
	}
}

var (
	readmePinPost   = regexp.MustCompile(`-XPOST .*/v1/pins -d '\{"cidr": "([^"]+)"`)
	readmePinDelete = regexp.MustCompile(`-XDELETE .*/v1/pins/(\S+)`)
	readmeExplain   = regexp.MustCompile(`/v1/explain\?addr=([^&']+)`)
)

// trackPins follows the pins the curl lines make and delete: an explain
// line must ask about a network a pin still holds, and the pin decides.
func (r *readmeRun) trackPins(t *testing.T, line int, cmd, out string, pins map[netip.Prefix]bool) {
	if m := readmePinPost.FindStringSubmatch(cmd); m != nil {
		pins[netip.MustParsePrefix(m[1])] = true
	}
	if m := readmePinDelete.FindStringSubmatch(cmd); m != nil {
		delete(pins, netip.MustParsePrefix(m[1]))
	}
	m := readmeExplain.FindStringSubmatch(cmd)
	if m == nil {
		return
	}
	asked := netip.MustParsePrefix(m[1])
	held := false
	for p := range pins {
		held = held || p.Overlaps(asked) && p.Bits() <= asked.Bits()
	}
	var e struct{ Tier string }
	json.Unmarshal([]byte(out), &e)
	if !held || e.Tier != "override" {
		t.Errorf("README line %d: the explain line asks about %s, which no pin holds at that point (pins %v), or the pin does not decide (tier %q)", line, asked, pins, e.Tier)
	}
}

// checkServerBlock: a whole Corefile passes gslb check; one with a log
// line is also served, asked the quick start's subnets, and its log must be
// what gslb replay reads: every query decided, each for the node it answered.
func (r *readmeRun) checkServerBlock(t *testing.T, b readmeBlock) {
	cf := r.mapPaths(b.text())
	name := fmt.Sprintf("Corefile.line%d", b.line)
	r.write(name, cf, 0o644)
	if out, code := r.tool(t, "check", "-conf", name); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("README line %d: gslb check: status %d:\n%s", b.line, code, out)
	}
	if !strings.Contains(cf, "\n    log ") {
		return
	}
	s := startReadmeServer(t, t, r, name, cf)
	want := map[string]int{}
	subnets := []string{"202.101.172.0/24", "202.106.0.0/24", "8.8.8.0/24", "114.114.114.0/24"}
	for _, sn := range subnets {
		ans, err := s.dig("dig @127.0.0.1 -p 53 www.example.org A +short +subnet=" + sn)
		if err != nil {
			t.Fatal(err)
		}
		want[nodeOfAddress(t, r, strings.TrimSpace(ans))]++
	}
	s.waitLine(t, "the last query's log line", "114.114.114.0")
	var log []string
	for _, l := range strings.Split(s.output(), "\n") {
		if strings.Contains(l, " www.example.org. ") {
			log = append(log, l)
		}
	}
	logFile := r.write(name+".log", strings.Join(log, "\n")+"\n", 0o644)
	out, code := r.toolJSON(t, "replay", "-json", "-conf", name, logFile)
	var rep struct {
		Queries int            `json:"queries"`
		Skipped int            `json:"skipped"`
		Nodes   map[string]int `json:"nodes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Queries != len(subnets) || rep.Skipped != 0 || fmt.Sprint(rep.Nodes) != fmt.Sprint(want) {
		t.Errorf("README line %d: gslb replay of this server's log: status %d, want %d queries, none skipped, nodes %v:\n%s\nlog:\n%s", b.line, code, len(subnets), want, out, strings.Join(log, "\n"))
	}
}

// nodeOfAddress names the demo node that has addr.
func nodeOfAddress(t *testing.T, r *readmeRun, addr string) string {
	var tbl struct {
		Nodes []struct {
			ID   string   `yaml:"id"`
			IPv4 []string `yaml:"ipv4"`
		} `yaml:"nodes"`
	}
	if err := yaml.Unmarshal([]byte(r.read("nodes.example.yaml")), &tbl); err != nil {
		t.Fatal(err)
	}
	for _, n := range tbl.Nodes {
		if contains(n.IPv4, addr) {
			return n.ID
		}
	}
	t.Fatalf("No demo node has %q", addr)
	return ""
}

// checkSyntax: every option of the grammar is described in a bullet.
func (r *readmeRun) checkSyntax(t *testing.T, b readmeBlock) {
	// the bullets after the grammar
	_, after, _ := strings.Cut(readmeText(t), b.text())
	for i, l := range b.lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "}" {
			continue
		}
		if !strings.Contains(after, "`"+f[0]+"`") && !strings.Contains(after, "`"+f[0]+" ") {
			t.Errorf("README line %d: option %q is not described", b.line+1+i, f[0])
		}
	}
}

// checkReplayCI runs the CI line on stand-ins for the operator's files:
// Corefile is Corefile.example, nodes.yaml and nodes-new.yaml the demo
// table, yesterday.log the quick start's log (a CoreDNS log, no
// cross-province answer): it must pass the policy (status 0).
func (r *readmeRun) checkReplayCI(t *testing.T, b readmeBlock) {
	r.write("Corefile", r.read("Corefile.example"), 0o644)
	r.write("nodes.yaml", r.read("nodes.example.yaml"), 0o644)
	r.write("nodes-new.yaml", r.read("nodes.example.yaml"), 0o644)
	r.write("yesterday.log", r.read("quickstart.log"), 0o644)
	for i, l := range b.lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "gslb" {
			t.Errorf("README line %d: %q: no rule runs this command", b.line+i, l)
			continue
		}
		out, code := r.tool(t, f[1:]...)
		if code != 0 || !strings.Contains(out, "Queries               3") {
			t.Errorf("README line %d: %s: status %d, want 0 and the log's 3 queries:\n%s", b.line+i, l, code, out)
		}
	}
}

// checkPluginCfg: building CoreDNS takes minutes and the network, so the
// block is run by make test-plugincfg (test/plugincfg.sh, not in make test);
// here each command must be one that script runs ($GSLB is its "$repo").
func (r *readmeRun) checkPluginCfg(t *testing.T, b readmeBlock) {
	script := mustRead(t, repoFile(t, "test/plugincfg.sh"))
	for i, l := range b.lines {
		cmd := strings.TrimSpace(l)
		if reason, ok := readmeSkipLines[cmd]; ok {
			r.skippedLines[cmd] = true
			t.Logf("README line %d: %q not run: %s", b.line+i, cmd, reason)
			continue
		}
		mapped := strings.ReplaceAll(cmd, "$GSLB", `"$repo"`)
		mapped = strings.TrimSuffix(mapped, " gslb")
		if !strings.Contains(script, "\n"+mapped) {
			t.Errorf("README line %d: %q is not a command test/plugincfg.sh runs", b.line+i, cmd)
		}
	}
}

// checkTranscript runs "$ " commands in W: gslb (the built tool), cat FILE
// (the output shown is FILE's content, written for what follows), echo $?.
func (r *readmeRun) checkTranscript(t *testing.T, b readmeBlock) {
	last := 0
	for _, c := range transcript(b) {
		f := strings.Fields(c.cmd)
		var got string
		switch {
		case f[0] == "cat" && len(f) == 2:
			r.write(f[1], strings.Join(c.out, "\n")+"\n", 0o644)
			continue
		case c.cmd == "echo $?":
			got = fmt.Sprint(last)
		case f[0] == "gslb" && len(f) > 1 && f[1] == "check" && strings.Contains(c.cmd, "-conf Corefile") && strings.Contains(strings.Join(c.out, "\n"), "lat: 95"):
			// The README's broken copy of the demo: Corefile is
			// Corefile.example, and sh-telecom's lat is 95.
			r.write("Corefile", r.read("Corefile.example"), 0o644)
			r.write("nodes.example.yaml", brokenLat(t, r.read("nodes.example.yaml"), "sh-telecom", "95"), 0o644)
			got, last = r.tool(t, f[1:]...)
			r.write("nodes.example.yaml", mustRead(t, repoFile(t, "nodes.example.yaml")), 0o644)
		case f[0] == "gslb":
			got, last = r.tool(t, f[1:]...)
		default:
			t.Errorf("README line %d: %q: no rule runs this command", c.line, c.cmd)
			continue
		}
		if msg := compareOutput(c.out, got); msg != "" {
			t.Errorf("README line %d: %s: %s", c.line, c.cmd, msg)
		}
	}
}

// brokenLat sets the lat of node id in a node table.
func brokenLat(t *testing.T, table, id, lat string) string {
	lines := strings.Split(table, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, "  - id: ") {
			in = strings.TrimPrefix(l, "  - id: ") == id
		}
		if in && strings.HasPrefix(strings.TrimSpace(l), "lat: ") {
			lines[i] = "    lat: " + lat
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("No lat for %s in the demo table", id)
	return ""
}

func mustRead(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func readmeText(t *testing.T) string { return mustRead(t, repoFile(t, "README.md")) }

type transcriptCmd struct {
	line int
	cmd  string
	out  []string
}

// transcript splits "$ command" lines and their output; a trailing
// "# comment" of a command is dropped.
func transcript(b readmeBlock) []transcriptCmd {
	var out []transcriptCmd
	for i, l := range b.lines {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			if c, _, ok := strings.Cut(cmd, "  #"); ok {
				cmd = c
			}
			out = append(out, transcriptCmd{line: b.line + i, cmd: strings.TrimSpace(cmd)})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].out = append(out[len(out)-1].out, l)
		}
	}
	return out
}

// compareOutput compares the shown lines with got; a shown "  ..." matches
// any lines. It returns "" when they agree.
func compareOutput(shown []string, got string) string {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if strings.TrimSpace(got) == "" {
		g = nil
	}
	if matchLines(shown, g) {
		return ""
	}
	return fmt.Sprintf("the output differs\nREADME:\n%s\nreal:\n%s", strings.Join(shown, "\n"), strings.Join(g, "\n"))
}

func matchLines(shown, got []string) bool {
	if len(shown) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(shown[0]) == "..." {
		for k := 0; k <= len(got); k++ {
			if matchLines(shown[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && strings.TrimRight(shown[0], " ") == strings.TrimRight(got[0], " ") && matchLines(shown[1:], got[1:])
}

// withGslbLines is Corefile.example with lines added to its gslb block.
func (r *readmeRun) withGslbLines(lines ...string) string {
	cf := r.read("Corefile.example")
	var add strings.Builder
	for _, l := range lines {
		for _, x := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			add.WriteString("        " + x + "\n")
		}
	}
	i := strings.Index(cf, "        ttl 60\n")
	if i < 0 {
		r.t.Error("Corefile.example has no `ttl 60` line in its gslb block")
		return cf
	}
	return cf[:i] + add.String() + cf[i:]
}

var readmeAbsPath = regexp.MustCompile(`(^|[\s"'=])/(etc/coredns|var/lib/GeoIP|var/lib/coredns)/`)

// mapPaths moves the examples' absolute paths under W.
func (r *readmeRun) mapPaths(s string) string {
	return readmeAbsPath.ReplaceAllString(s, "${1}"+r.w+"/${2}/")
}

// tool runs the gslb tool in W and returns what it prints and its status.
func (r *readmeRun) tool(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return r.runTool(t, true, args...)
}

// toolJSON is tool with standard output alone.
func (r *readmeRun) toolJSON(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return r.runTool(t, false, args...)
}

func (r *readmeRun) runTool(t *testing.T, stderr bool, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gslbTool(t), args...)
	cmd.Dir = r.w
	var buf bytes.Buffer
	cmd.Stdout = &buf
	if stderr {
		cmd.Stderr = &buf
	}
	err := cmd.Run()
	out := buf.Bytes()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("gslb %v: %v", args, err)
	return "", 0
}

func (r *readmeRun) bash(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-c", script)
	cmd.Dir = r.w
	out, err := cmd.CombinedOutput()
	return string(out), err
}

type explainOut struct {
	Location struct {
		Source   string `json:"source"`
		Province string `json:"province"`
	} `json:"location"`
	Candidates []explainCandidate `json:"candidates"`
	Tier       string             `json:"tier"`
	Node       string             `json:"node"`
}

type explainCandidate struct {
	ID    string             `json:"id"`
	RTT   *float64           `json:"rtt_ms"`
	Terms map[string]float64 `json:"terms"`
}

func (e explainOut) candidate(id string) (explainCandidate, bool) {
	for _, c := range e.Candidates {
		if c.ID == id {
			return c, true
		}
	}
	return explainCandidate{}, false
}

func (r *readmeRun) explain(t *testing.T, conf, client string) explainOut {
	t.Helper()
	out, code := r.toolJSON(t, "explain", "-json", "-conf", conf, client)
	var e explainOut
	if code != 0 || json.Unmarshal([]byte(out), &e) != nil {
		t.Fatalf("gslb explain -conf %s %s: status %d:\n%s", conf, client, code, out)
	}
	return e
}

// readmeServer is our CoreDNS build run as a process in W.
type readmeServer struct {
	ports map[string]string // README port -> real port
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   bytes.Buffer
}

func (s *readmeServer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *readmeServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *readmeServer) waitLine(t *testing.T, what, substr string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s: a log line with %q", what, substr), func() (bool, string) {
		return strings.Contains(s.output(), substr), s.output()
	})
}

var corednsBin struct {
	once sync.Once
	path string
	err  error
}

// corednsTool builds cmd/coredns once, next to the gslb tool.
func corednsTool(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(gslbTool(t))
	corednsBin.once.Do(func() {
		corednsBin.path = filepath.Join(dir, "coredns")
		out, err := exec.Command("go", "build", "-o", corednsBin.path, "github.com/gslbdns/gslb/cmd/coredns").CombinedOutput()
		if err != nil {
			corednsBin.err = fmt.Errorf("go build ./cmd/coredns: %v\n%s", err, out)
		}
	})
	if corednsBin.err != nil {
		t.Fatal(corednsBin.err)
	}
	return corednsBin.path
}

// freePorts returns n distinct loopback ports free for both UDP and TCP
// just now.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for try := 0; len(ports) < n && try < 100; try++ {
		l := testsupport.ListenLow(t)
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			held = append(held, u)
			ports = append(ports, fmt.Sprint(port))
		}
	}
	if len(ports) < n {
		t.Fatal("No free loopback ports")
	}
	return ports
}

var (
	readmeServerKey = regexp.MustCompile(`(?m)^([a-z0-9.]+) \{\n`)
	readmeBareProm  = regexp.MustCompile(`(?m)^(\s+)prometheus\n`)
	readmeBareReady = regexp.MustCompile(`(?m)^(\s+)ready\n`)
)

// startReadmeServer writes corefile as W/name.ports with its ports mapped
// and runs it until the test owner ends.
func startReadmeServer(t, owner *testing.T, r *readmeRun, name, corefile string) *readmeServer {
	t.Helper()
	s := &readmeServer{ports: map[string]string{}}
	readmePorts := []string{"1053", "53", "9153", "8181", "9154"}
	for i, p := range freePorts(t, len(readmePorts)) {
		s.ports[readmePorts[i]] = p
	}
	cf := readmeServerKey.ReplaceAllString(corefile, "${1}:53 {\n    bind 127.0.0.1\n")
	cf = readmeBareProm.ReplaceAllString(cf, "${1}prometheus 127.0.0.1:9153\n")
	cf = readmeBareReady.ReplaceAllString(cf, "${1}ready 127.0.0.1:8181\n")
	s.run(t, owner, r, name+".ports", s.mapPorts(cf))
	return s
}

// run writes cf as W/name and runs it until the test owner ends, once it
// answers on its README port 1053 (or 53).
func (s *readmeServer) run(t, owner *testing.T, r *readmeRun, name, cf string) {
	t.Helper()
	r.write(name, cf, 0o644)
	done := s.start(t, owner, r.w, name)
	port := s.ports["1053"]
	if !strings.Contains(cf, ":"+port+" {") {
		port = s.ports["53"]
	}
	waitFor(t, "the server "+name+" to answer", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("CoreDNS -conf %s exited:\n%s\n%s", name, s.output(), cf)
		default:
		}
		c := &dns.Client{Timeout: 200 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion("example.org.", dns.TypeSOA)
		_, _, err := c.Exchange(m, "127.0.0.1:"+port)
		return err == nil, s.output()
	})
}

// start runs our cmd/coredns in dir on the Corefile conf until owner
// ends, its output into s; done closes when it exits.
func (s *readmeServer) start(t, owner *testing.T, dir, conf string) (done <-chan struct{}) {
	t.Helper()
	s.cmd = exec.Command(corednsTool(t), "-conf", conf)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s, s
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	owner.Cleanup(func() {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-exited
		}
	})
	return exited
}

var readmePort = regexp.MustCompile(`(127\.0\.0\.1|localhost|example\.org|\s-p) ?:?(1053|53|9153|8181|9154)\b`)

// mapPorts replaces the README's ports by this server's.
func (s *readmeServer) mapPorts(text string) string {
	return readmePort.ReplaceAllStringFunc(text, func(m string) string {
		sub := readmePort.FindStringSubmatch(m)
		return strings.TrimSuffix(m, sub[2]) + s.ports[sub[2]]
	})
}

// dig runs a dig command line against s: @SERVER, -p PORT, NAME, TYPE,
// +subnet=PREFIX and +short, printing what dig +short prints.
func (s *readmeServer) dig(line string) (string, error) {
	f := strings.Fields(line)[1:]
	server, port, name, qtype, short := "", "53", "", dns.TypeA, false
	var subnet *netip.Prefix
	for i := 0; i < len(f); i++ {
		a := f[i]
		switch {
		case strings.HasPrefix(a, "@"):
			server = a[1:]
		case a == "-p" && i+1 < len(f):
			i++
			port = f[i]
		case a == "+short":
			short = true
		case strings.HasPrefix(a, "+subnet="):
			p, err := netip.ParsePrefix(strings.TrimPrefix(a, "+subnet="))
			if err != nil {
				return "", err
			}
			subnet = &p
		case strings.HasPrefix(a, "+") || strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("dig option %s: not one this test knows (check it against dig's manual)", a)
		case dns.StringToType[strings.ToUpper(a)] != 0 && name != "":
			qtype = dns.StringToType[strings.ToUpper(a)]
		default:
			name = a
		}
	}
	if !short {
		return "", errors.New("only dig +short output is compared")
	}
	real, ok := s.ports[port]
	if !ok {
		return "", fmt.Errorf("port %s is not one of the example's", port)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if subnet != nil {
		e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(subnet.Bits()), Address: net.IP(subnet.Addr().AsSlice())}
		if subnet.Addr().Is6() {
			e.Family = 2
		}
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: []dns.EDNS0{e}}
		o.SetUDPSize(1232)
		m.Extra = append(m.Extra, o)
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	reply, _, err := c.Exchange(m, net.JoinHostPort(server, real))
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, rr := range reply.Answer {
		h := rr.Header().String()
		out.WriteString(strings.TrimPrefix(rr.String(), h) + "\n")
	}
	return out.String(), nil
}
