package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string { return filepath.Dir(repoFile(t, "go.mod")) }

// command runs name in dir within a generous bound and returns its output.
func command(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestMakeBuild: make build writes both binaries, and each names the
// plugin's version and commit: coredns -version first, then CoreDNS's own
// lines; gslb version alone.
func TestMakeBuild(t *testing.T) {
	root, bin := repoRoot(t), t.TempDir()
	if out, err := command(t, root, "make", "build", "BIN="+bin); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	version, commit := "unknown", "unknown"
	if out, err := command(t, root, "git", "describe", "--tags", "--always", "--dirty"); err == nil {
		version = strings.TrimSpace(out)
	}
	if out, err := command(t, root, "git", "rev-parse", "HEAD"); err == nil {
		commit = strings.TrimSpace(out)
	}
	want := fmt.Sprintf("gslb %s, commit %s", version, commit)
	out, err := command(t, bin, filepath.Join(bin, "coredns"), "-version")
	if err != nil {
		t.Fatalf("coredns -version: %v\n%s", err, out)
	}
	if lines := strings.Split(out, "\n"); lines[0] != want || len(lines) < 2 || lines[1] != "CoreDNS-1.15.0" {
		t.Errorf("Expected coredns -version to print %q, then CoreDNS-1.15.0, got:\n%s", want, out)
	}
	out, err = command(t, bin, filepath.Join(bin, "gslb"), "version")
	if err != nil || out != want+"\n" {
		t.Errorf("Expected gslb version to print %q, got %v:\n%s", want, err, out)
	}
	// Built without make, as go run does, it still names itself.
	out, err = command(t, bin, corednsTool(t), "-version")
	if err != nil || !strings.HasPrefix(out, "gslb ") || !strings.Contains(out, "\nCoreDNS-1.15.0\n") {
		t.Errorf("Expected go build's coredns -version to name gslb and CoreDNS, got %v:\n%s", err, out)
	}
}

// TestREADMEStockPlugins: the README's list of the stock plugins our build
// links is what coredns -plugins prints, gslb aside.
func TestREADMEStockPlugins(t *testing.T) {
	out, err := command(t, t.TempDir(), corednsTool(t), "-plugins")
	if err != nil {
		t.Fatalf("coredns -plugins: %v\n%s", err, out)
	}
	var built []string
	for _, p := range strings.Fields(out) {
		if p != "gslb" {
			built = append(built, p)
		}
	}
	m := regexp.MustCompile(`the stock plugins\s+([a-z0-9_,\s]+?)\s+and\s+([a-z0-9_]+),\s+each in CoreDNS's own directive order`).FindStringSubmatch(readmeText(t))
	if m == nil {
		t.Fatal(`README "Building CoreDNS with gslb" no longer lists "the stock plugins a, b ... and z, each in CoreDNS's own directive order"`)
	}
	var listed []string
	for _, p := range strings.Split(m[1], ",") {
		listed = append(listed, strings.TrimSpace(p))
	}
	listed = append(listed, m[2])
	slices.Sort(listed)
	slices.Sort(built)
	if !slices.Equal(listed, built) {
		t.Errorf("README lists the stock plugins\n  %v\ncoredns -plugins prints\n  %v", listed, built)
	}
}

// TestREADMECitesNothingOutside: the README names no document outside the
// repository; a section sign only follows an RFC's number.
func TestREADMECitesNothingOutside(t *testing.T) {
	text := readmeText(t)
	for i, line := range strings.Split(text, "\n") {
		if regexp.MustCompile(`(?i)\bseeds?\b`).MatchString(line) {
			t.Errorf("README line %d cites a design document: %s", i+1, line)
		}
		for _, loc := range regexp.MustCompile(`§`).FindAllStringIndex(line, -1) {
			if !regexp.MustCompile(`RFC \d{3,5} $`).MatchString(line[:loc[0]]) {
				t.Errorf("README line %d: a section sign after no RFC number: %s", i+1, line)
			}
		}
	}
}

// loopbackSockets counts the sockets bound to 127.0.0.1:port in a
// /proc/net table: UDP ones, or listening TCP ones.
func loopbackSockets(t *testing.T, table, port string) int {
	t.Helper()
	f, err := os.Open("/proc/net/" + table)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p int
	fmt.Sscan(port, &p)
	local := fmt.Sprintf("0100007F:%04X", p)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 3 && f[1] == local && (table == "udp" || f[3] == "0A") {
			n++
		}
	}
	return n
}

// TestMultisocket: our build links the multisocket plugin, and with
// `multisocket 2` CoreDNS listens on the port with two UDP and two TCP
// sockets, and answers.
func TestMultisocket(t *testing.T) {
	r := newReadmeRun(t)
	cf := strings.Replace(r.read("Corefile.example"), "    bind 127.0.0.1\n", "    bind 127.0.0.1\n    multisocket 2\n", 1)
	s := startReadmeServer(t, t, r, "Corefile.multisocket", cf)
	port := s.ports["1053"]
	if u, l := loopbackSockets(t, "udp", port), loopbackSockets(t, "tcp", port); u != 2 || l != 2 {
		t.Errorf("Expected 2 UDP sockets and 2 TCP listeners on port %s, got %d and %d", port, u, l)
	}
	if got, err := s.dig("dig @127.0.0.1 -p 1053 www.example.org A +subnet=202.101.172.0/24 +short"); err != nil || got != "192.0.2.10\n" {
		t.Errorf("Expected hz-telecom's 192.0.2.10 through multisocket, got %q (%v)", got, err)
	}
}

// TestSecondCopySamePort: as the quick start warns, a second copy on the
// same port starts without an error (CoreDNS sets SO_REUSEPORT), and the
// kernel splits the port between both.
func TestSecondCopySamePort(t *testing.T) {
	if !strings.Contains(readmeText(t), "SO_REUSEPORT") {
		t.Errorf("The quick start does not say that a second copy on the same port starts (SO_REUSEPORT)")
	}
	r := newReadmeRun(t)
	first := startReadmeServer(t, t, r, "Corefile.example", r.read("Corefile.example"))
	second := &readmeServer{ports: first.ports}
	second.run(t, t, r, "Corefile.example.second", r.read("Corefile.example.ports"))
	port := first.ports["1053"]
	// The first answered run's queries: the second is up once it says so.
	second.waitLine(t, "the second copy", "example.org.:"+port+" on 127.0.0.1")
	waitFor(t, "both copies' sockets", func() (bool, string) {
		u, l := loopbackSockets(t, "udp", port), loopbackSockets(t, "tcp", port)
		return u == 2 && l == 2, fmt.Sprintf("%d UDP sockets and %d TCP listeners on port %s", u, l, port)
	})
}

// TestLicense: the repository is under the Apache License 2.0, as CoreDNS.
func TestLicense(t *testing.T) {
	text := mustRead(t, repoFile(t, "LICENSE"))
	for _, s := range []string{"Apache License\n                           Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(text, s) {
			t.Errorf("LICENSE lacks %q: not the Apache License 2.0 text", s)
		}
	}
	if !strings.Contains(readmeText(t), "LICENSE") || !strings.Contains(readmeText(t), "CHANGELOG.md") {
		t.Errorf("The README names neither LICENSE nor CHANGELOG.md")
	}
	if !strings.HasPrefix(mustRead(t, repoFile(t, "CHANGELOG.md")), "# Changelog\n") {
		t.Errorf("CHANGELOG.md does not start with its title")
	}
}

// TestSystemdUnit: systemd-analyze verify passes contrib's unit, in a root
// with the host's system units and our coredns where ExecStart runs it.
func TestSystemdUnit(t *testing.T) {
	analyze := dnsTool(t, "systemd-analyze")
	unit := repoFile(t, "contrib/systemd/coredns.service")
	if !strings.Contains(readmeText(t), "contrib/systemd/coredns.service") {
		t.Errorf("The README does not document contrib/systemd/coredns.service")
	}
	root := t.TempDir()
	for _, d := range []string{"usr/local/bin", "etc/systemd/system", "usr/lib/systemd", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range [][2]string{
		{"/usr/lib/systemd/system", "usr/lib/systemd/"},
		{corednsTool(t), "usr/local/bin/coredns"},
		{"/bin/kill", "bin/kill"},
		{unit, "etc/systemd/system/coredns.service"},
	} {
		if out, err := command(t, root, "cp", "-a", c[0], filepath.Join(root, c[1])); err != nil {
			t.Fatalf("cp %s: %v\n%s", c[0], err, out)
		}
	}
	out, err := command(t, root, analyze, "verify", "--root="+root, "--man=no", "coredns.service")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify coredns.service: %v\n%s", err, out)
	}
	// ExecStart's flag is one our build takes.
	if out, err := command(t, root, corednsTool(t), "-conf", "/nonexistent/Corefile"); !strings.Contains(out, "/nonexistent/Corefile") {
		t.Errorf("coredns -conf: %v\n%s", err, out)
	}
}

// dockerInstr is one instruction of a Dockerfile.
type dockerInstr struct {
	line     int
	op, args string
}

// parseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T, text string) []dockerInstr {
	var out []dockerInstr
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		cont := strings.HasSuffix(trimmed, "\\")
		cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
		if cont {
			continue
		}
		op, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		if strings.ToUpper(op) != op {
			t.Errorf("Dockerfile line %d: instruction %q is not upper case", start, op)
		}
		out = append(out, dockerInstr{start, op, strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Errorf("Dockerfile ends in a continuation line")
	}
	return out
}

// TestDockerfile checks contrib's Dockerfile statically (no docker here):
// the Go of go.mod builds with make build, every file it copies exists in
// the repository or in the build stage's output, and the image runs our
// coredns, not as root, on port 53.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	if !strings.Contains(readmeText(t), "contrib/docker/Dockerfile") {
		t.Errorf("The README does not document contrib/docker/Dockerfile")
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(mustRead(t, filepath.Join(root, "go.mod")))
	makefile := mustRead(t, filepath.Join(root, "Makefile"))
	known := map[string]bool{"FROM": true, "WORKDIR": true, "COPY": true, "RUN": true, "ARG": true, "USER": true, "EXPOSE": true, "ENTRYPOINT": true, "CMD": true}
	var stages []string
	built := map[string]bool{} // files the build stage writes
	args := map[string]bool{}
	var user, entry string
	var exposed []string
	for _, in := range parseDockerfile(t, mustRead(t, filepath.Join(root, "contrib/docker/Dockerfile"))) {
		if !known[in.op] {
			t.Errorf("Dockerfile line %d: unexpected instruction %s", in.line, in.op)
		}
		switch in.op {
		case "FROM":
			f := strings.Fields(in.args)
			stages = append(stages, f[0])
			if len(stages) == 1 && (goVersion == nil || !strings.HasPrefix(f[0], "golang:"+goVersion[1]+"-")) {
				t.Errorf("Dockerfile line %d: the build stage's image %s is not go.mod's Go %v", in.line, f[0], goVersion)
			}
		case "ARG":
			name, _, _ := strings.Cut(in.args, "=")
			args[name] = true
		case "RUN":
			for _, ref := range regexp.MustCompile(`\$\{?([A-Z_]+)`).FindAllStringSubmatch(in.args, -1) {
				if !args[ref[1]] {
					t.Errorf("Dockerfile line %d: $%s is no ARG", in.line, ref[1])
				}
			}
			if m := regexp.MustCompile(`make build BIN=(\S+)`).FindStringSubmatch(in.args); m != nil {
				built[m[1]+"/coredns"], built[m[1]+"/gslb"] = true, true
				for _, v := range []string{"BIN ?=", "VERSION ?=", "COMMIT ?="} {
					if !strings.Contains(makefile, v) {
						t.Errorf("Dockerfile line %d: make build takes no %s", in.line, strings.TrimSuffix(v, " ?="))
					}
				}
			}
		case "COPY":
			f := strings.Fields(in.args)
			from := strings.HasPrefix(f[0], "--from=")
			if from {
				f = f[1:]
			}
			for _, src := range f[:len(f)-1] {
				switch {
				case from && !built[src]:
					t.Errorf("Dockerfile line %d: %s is nothing the build stage wrote", in.line, src)
				case !from && src != ".":
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("Dockerfile line %d: %v", in.line, err)
					}
				}
			}
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = strings.Fields(in.args)
		case "ENTRYPOINT":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
				t.Errorf("Dockerfile line %d: ENTRYPOINT is not an exec-form array: %v", in.line, err)
			} else {
				entry = argv[0]
			}
		}
	}
	if len(stages) != 2 || len(built) == 0 {
		t.Errorf("Expected a build stage running make build and a runtime stage, got %v", stages)
	}
	if user == "" || user == "root" || user == "0" {
		t.Errorf("Expected the image to run as a user other than root, got %q", user)
	}
	if entry != "/usr/local/bin/coredns" {
		t.Errorf("Expected the image to run /usr/local/bin/coredns, got %q", entry)
	}
	if !slices.Contains(exposed, "53/udp") || !slices.Contains(exposed, "53/tcp") {
		t.Errorf("Expected port 53 over UDP and TCP exposed, got %v", exposed)
	}
}
