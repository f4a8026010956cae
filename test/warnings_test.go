package test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// runCoreDNS runs our cmd/coredns on the Corefile conf until the test ends
// and returns it once its gslb block has loaded: everything the start
// logs is in its output then.
func runCoreDNS(t *testing.T, conf string) *readmeServer {
	t.Helper()
	s := &readmeServer{}
	done := s.start(t, t, filepath.Dir(conf), conf)
	waitFor(t, "CoreDNS -conf "+conf+" to load its gslb block", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("CoreDNS -conf %s exited:\n%s", conf, s.output())
		default:
		}
		return strings.Contains(s.output(), "] plugin/gslb: Loaded "), s.output()
	})
	return s
}

// loggedWarnings are the messages of the [WARNING] lines of a log.
func loggedWarnings(out, tag string) []string {
	var ws []string
	for l := range strings.Lines(out) {
		if _, w, ok := strings.Cut(l, tag); ok {
			ws = append(ws, strings.TrimSpace(w))
		}
	}
	slices.Sort(ws)
	return ws
}

// TestCheckPrintsStartWarnings: gslb check prints every Warning a real
// CoreDNS logs when it starts the same Corefile (a stock plugin's, gslb's
// MNAME and ladder warnings, a log of gslb labels without metadata), and
// still says ok with status 0.
func TestCheckPrintsStartWarnings(t *testing.T) {
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", adminNodes)
	port := strings.TrimPrefix(testsupport.FreeAddr(t), "127.0.0.1:")
	conf := writeFile(t, dir, "Corefile", fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    log . "{type} {name} client={/gslb/client} node={/gslb/node}"
    gslb {
        geoip %s
        nodes %s
        ladder province country all
    }
}
example.net:%s {
    bind 127.0.0.1
    file %s example.net
}
`, port, repoFile(t, "demo/gslb-demo-City.mmdb"), nodes, port, filepath.Join(dir, "missing.zone")))

	out, stderr, code := runTool(t, "check", "-conf", conf)
	if code != 0 || out != "ok\n" {
		t.Fatalf("gslb check: status %d, stdout %q, want ok and 0\n%s", code, out, stderr)
	}
	checked := loggedWarnings(stderr, "WARNING: ")
	for _, want := range []string{
		"plugin/file: Failed to open",
		"plugin/gslb: zone example.org.: the SOA's MNAME ns1.dns.example.org.",
		"plugin/gslb: ladder (" + conf + ":7) leaves out",
		`plugin/gslb: the log of server block example.org:` + port + ` writes {/gslb/...} labels, but the block has no metadata plugin`,
	} {
		if !slices.ContainsFunc(checked, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("gslb check does not warn %q:\n%s", want, stderr)
		}
	}
	s := runCoreDNS(t, conf)
	if started := loggedWarnings(s.output(), "[WARNING] "); !slices.Equal(started, checked) {
		t.Errorf("gslb check warns\n%s\nthe server's start\n%s", strings.Join(checked, "\n"), strings.Join(started, "\n"))
	}
}

// TestMetadataMissing: a log of gslb labels in a block without metadata
// warns at a real start, and gslb replay of what it logged says why
// nothing was decided.
func TestMetadataMissing(t *testing.T) {
	dir := t.TempDir()
	nodes := writeFile(t, dir, "nodes.yaml", adminNodes)
	addr := testsupport.FreeAddr(t)
	conf := writeFile(t, dir, "Corefile", fmt.Sprintf(`example.org:%s {
    bind 127.0.0.1
    log . "{remote} {type} {name} {rcode} client={/gslb/client} via={/gslb/client_source} ecs={/gslb/ecs} node={/gslb/node}"
    gslb {
        geoip %s
        nodes %s
        soa {
            mname ns1.example.net
        }
    }
}
`, strings.TrimPrefix(addr, "127.0.0.1:"), repoFile(t, "demo/gslb-demo-City.mmdb"), nodes))
	s := runCoreDNS(t, conf)
	const warning = `the log of server block example.org:%s writes {/gslb/...} labels, but the block has no metadata plugin: every label is logged as "-"; add a line "metadata" to the block`
	if ws := loggedWarnings(s.output(), "[WARNING] plugin/gslb: "); !slices.Equal(ws, []string{fmt.Sprintf(warning, strings.TrimPrefix(addr, "127.0.0.1:"))}) {
		t.Errorf("Start warnings %q, want the metadata one:\n%s", ws, s.output())
	}
	waitFor(t, "the server to answer", func() (bool, string) {
		c := &dns.Client{Timeout: time.Second}
		m := new(dns.Msg)
		m.SetQuestion("example.org.", dns.TypeSOA)
		_, _, err := c.Exchange(m, addr)
		return err == nil, fmt.Sprint(err)
	})
	for _, sn := range []string{"202.101.172.0/24", "202.106.0.0/24", "8.8.8.0/24"} {
		q := newQuery(t, "www.example.org", dns.TypeA, sn)
		if r := exchange(t, "udp", addr, q); r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			t.Fatalf("A for %s: %s", sn, r)
		}
	}
	waitFor(t, "the three queries' log lines", func() (bool, string) {
		return strings.Count(s.output(), " A www.example.org. ") == 3, s.output()
	})
	log := writeFile(t, dir, "query.log", s.output())
	if !strings.Contains(s.output(), "client=- ") {
		t.Fatalf("The log has no client=-:\n%s", s.output())
	}
	_, stderr, code := runTool(t, "replay", "-conf", conf, log)
	if code != 1 || !strings.Contains(stderr, "every line has client=-: was metadata enabled?") {
		t.Errorf("gslb replay: status %d, stderr %q, want 1 and the metadata hint", code, stderr)
	}
}

// TestShippedExamplesStartClean: the demo (Corefile.example) and the
// README's full node table start without a Warning.
func TestShippedExamplesStartClean(t *testing.T) {
	r := newReadmeRun(t)
	s := startReadmeServer(t, t, r, "Corefile.example", r.read("Corefile.example"))
	s.waitLine(t, "the demo", "plugin/gslb: Loaded ")
	if ws := loggedWarnings(s.output(), "[WARNING] "); len(ws) > 0 {
		t.Errorf("The demo warns at its start:\n%s", strings.Join(ws, "\n"))
	}

	var full string
	for _, b := range readmeBlocks(t) {
		if b.kind == "yaml" && b.first() == "nodes:" && strings.Contains(b.text(), "nameservers:") && strings.Contains(b.text(), "probe_defaults:") {
			full = b.text()
		}
	}
	if full == "" {
		t.Fatal("The README has no full node table (nodes, probe_defaults, nameservers)")
	}
	r.write("nodes.full.yaml", full, 0o644)
	cf := strings.Replace(r.read("Corefile.example"), "nodes nodes.example.yaml", "nodes nodes.full.yaml", 1)
	s = startReadmeServer(t, t, r, "Corefile.full", cf)
	s.waitLine(t, "the README's node table", "plugin/gslb: Loaded ")
	if ws := loggedWarnings(s.output(), "[WARNING] "); len(ws) > 0 {
		t.Errorf("The README's node table warns at its start:\n%s", strings.Join(ws, "\n"))
	}
}
