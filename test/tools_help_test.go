package test

import (
	"strings"
	"testing"
)

// TestToolHelp: every command's -h gives its exit statuses and an
// example, and exits 0.
func TestToolHelp(t *testing.T) {
	for _, cmd := range []string{"explain", "replay", "check", "audit", "resolvers"} {
		_, stderr, code := runTool(t, cmd, "-h")
		if code != 0 || !strings.Contains(stderr, "\nExit status: 0 ") || !strings.Contains(stderr, "2 bad usage") ||
			!strings.Contains(stderr, "\nExample:\n  gslb "+cmd+" -conf ") {
			t.Errorf("gslb %s -h: exit %d, want 0, exit statuses and an example:\n%s", cmd, code, stderr)
		}
	}
	if _, stderr, _ := runTool(t, "replay", "-h"); !strings.Contains(stderr, "3 the cross-province ratio is above -max-cross") {
		t.Errorf("gslb replay -h does not give status 3:\n%s", stderr)
	}
}

// TestToolOneSourceAndCounts: audit over a block with one location source
// says why nothing is compared; the text replay report gives the skipped
// and ignored counts; an -overrides file's error names that file and its
// line, not a line of the Corefile.
func TestToolOneSourceAndCounts(t *testing.T) {
	dir := t.TempDir()
	nodes := repoFile(t, "nodes.example.yaml")
	conf := writeFile(t, dir, "Corefile", gslbCorefile(t, nodes, ""))
	in := writeFile(t, dir, "in.txt", "202.101.172.0/24 3\nnot a client\n")

	good := writeFile(t, dir, "good.txt", "202.101.172.0/24\n")
	out, stderr, code := runTool(t, "audit", "-conf", conf, good)
	if code != 0 || !strings.Contains(stderr, "gslb audit: nothing to compare: the block has one location source (geoip)") {
		t.Errorf("audit with one source: exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}

	out, stderr, code = runTool(t, "replay", "-conf", conf, in)
	for _, want := range []string{"Queries               3\n", "Skipped               1 malformed lines or frames\n",
		"Ignored               0 (0 for other names, 0 of other types, 0 other log lines, 0 dnstap frames without the query)\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("replay: exit %d, want %q in the report:\n%s%s", code, want, out, stderr)
		}
	}

	ov := writeFile(t, dir, "ov.yaml", "overrides:\n  - cidr: 203.0.113.0/24\n    nodes: [nope]\n")
	for _, cmd := range [][]string{{"check"}, {"explain", "203.0.113.1"}, {"replay", in}} {
		args := append([]string{cmd[0], "-conf", conf, "-overrides", ov}, cmd[1:]...)
		_, stderr, code := runTool(t, args...)
		if code != 1 || !strings.Contains(stderr, "overrides "+ov+": line 3: overrides[0]: field nodes: unknown node \"nope\"") ||
			strings.Contains(stderr, conf+":") {
			t.Errorf("gslb %s -overrides: exit %d, want 1 and an error naming %s, not the Corefile: %s", cmd[0], code, ov, stderr)
		}
	}
}
