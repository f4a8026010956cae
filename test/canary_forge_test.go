package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/miekg/dns"
)

// forgeDBs: 1.0.0.0/8 is Zhejiang, 2.0.0.0/8 Beijing and 3.0.0.0/8
// Xinjiang, where adminNodes has no node: its clients are cross-province.
func forgeDBs(t *testing.T, dir string) (city, asn string) {
	return testsupport.WriteDBs(t, dir, []mmdbgen.City{
		{Network: "1.0.0.0/8", Country: "CN", Province: "ZJ", Lat: 30.27, Lon: 120.16, Radius: 50},
		{Network: "2.0.0.0/8", Country: "CN", Province: "BJ", Lat: 39.9, Lon: 116.4, Radius: 50},
		{Network: "3.0.0.0/8", Country: "CN", Province: "XJ", Lat: 43.8, Lon: 87.6, Radius: 50},
	}, []mmdbgen.ASN{
		{Network: "1.0.0.0/8", ASN: 4134, Org: "Chinanet"},
		{Network: "2.0.0.0/8", ASN: 4134, Org: "Chinanet"},
		{Network: "3.0.0.0/8", ASN: 4134, Org: "Chinanet"},
	})
}

// startForge is startAdmin on forgeDBs.
func startForge(t *testing.T, extra string) *adminEnv {
	t.Helper()
	return startAdminOn(t, forgeDBs, extra)
}

// subnetsIn are n distinct /24s of the /8 first.
func subnetsIn(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%d.%d.%d.0/24", first, i/256, i%256)
	}
	return out
}

// canaryOf finds up to n of the subnets in the canary, asking each once:
// the test, unlike a forger, reads the policy from the metrics.
func canaryOf(t *testing.T, e *adminEnv, subnets []string, n int) []string {
	t.Helper()
	var out []string
	for _, s := range subnets {
		before := counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary")
		e.answer(t, "www.example.org", s)
		if counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary") > before {
			if out = append(out, s); len(out) == n {
				return out
			}
		}
	}
	t.Fatalf("Only %d of %d subnets in the canary", len(out), len(subnets))
	return nil
}

type canaryAPI struct {
	Percent    float64
	RolledBack bool `json:"rolled_back"`
	Reason     string
	Decisions  uint64
}

func (e *adminEnv) canary(t *testing.T) canaryAPI {
	t.Helper()
	_, body := e.call(t, "GET", "/v1/canary", e.token, "")
	var c canaryAPI
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("GET /v1/canary: %v: %s", err, body)
	}
	return c
}

// TestCanaryForgedFloodNoRollback: with a candidate identical to the stable
// table, 2,048 forged queries from four cross-province /24s of the canary
// count as four subnets, and do not roll it back.
func TestCanaryForgedFloodNoRollback(t *testing.T) {
	dir := t.TempDir()
	cand := writeFile(t, dir, "candidate.yaml", adminNodes)
	e := startForge(t, "canary "+cand+" 10 {\n rollback_cross 0.02\n rollback_min 100\n}")
	start := counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary")
	// Real clients: 3,000 Zhejiang /24s, answered in their province.
	for _, s := range subnetsIn(1, 3000) {
		e.answer(t, "www.example.org", s)
	}
	forged := canaryOf(t, e, subnetsIn(3, 1000), 4)
	for i := range 2048 {
		e.answer(t, "www.example.org", forged[i%len(forged)])
	}
	if v := gaugeValue(t, "coredns_gslb_canary_rolled_back", "", ""); v != 0 {
		t.Errorf("Expected the canary not rolled back by a forged flood, got coredns_gslb_canary_rolled_back %v", v)
	}
	c := e.canary(t)
	if c.RolledBack || c.Percent != 10 {
		t.Fatalf("Expected the canary at 10%%, not rolled back, got %+v", c)
	}
	// Every canary decision but the flood's was a distinct subnet; two
	// subnets sharing a slot of the window's set count once.
	distinct := counterSum(t, "coredns_gslb_policy_decisions_total", "policy", "canary") - start - 2048
	if d := float64(c.Decisions); d > distinct || d < 0.9*distinct {
		t.Errorf("Expected about %v counted canary decisions (each subnet once), got %d", distinct, c.Decisions)
	}
}

// TestCanaryForgedCannotHoldBack: a candidate that sends everyone to
// Xinjiang rolls back with many distinct Zhejiang subnets, though a forger
// sends six in-province (Xinjiang) canary queries per real one.
func TestCanaryForgedCannotHoldBack(t *testing.T) {
	dir := t.TempDir()
	bad := strings.ReplaceAll(adminNodes, "province: ZJ", "province: XJ")
	bad = strings.ReplaceAll(strings.ReplaceAll(bad, "province: SH", "province: XJ"), "province: BJ", "province: XJ")
	cand := writeFile(t, dir, "candidate.yaml", bad)
	e := startForge(t, "canary "+cand+" 30 {\n rollback_cross 0.2\n rollback_min 200\n}")
	forged := canaryOf(t, e, subnetsIn(3, 1000), 4)
	for i, s := range subnetsIn(1, 2000) {
		for j := range 6 {
			e.answer(t, "www.example.org", forged[(i+j)%len(forged)])
		}
		e.answer(t, "www.example.org", s)
		if i%100 == 99 && e.canary(t).RolledBack {
			break
		}
	}
	c := e.canary(t)
	if !c.RolledBack || !strings.Contains(c.Reason, "rollback_cross 0.2") {
		t.Fatalf("Expected the bad candidate rolled back despite the forger, got %+v", c)
	}
}

// TestCanaryTrustECS: with trust_ecs, ECS from a resolver outside it is
// ignored: the query is answered for the resolver's own address, with
// scope 0, and counts for the canary as the resolver's one subnet.
func TestCanaryTrustECS(t *testing.T) {
	dir := t.TempDir()
	cand := writeFile(t, dir, "candidate.yaml", canaryNodes)
	// The tests query from 127.0.0.1.
	untrusted := startForge(t, "trust_ecs 192.0.2.53 2001:db8::/32\ncanary "+cand+" 100 {\n rollback_cross 0.5\n}")
	ignored := counterSum(t, "coredns_gslb_ecs_total", "result", "ignored")
	// img is hz-a and bj in both tables: Zhejiang gets hz-a, Beijing bj.
	loopback := untrusted.answer(t, "img.example.org", "")
	for _, s := range append(subnetsIn(1, 200), subnetsIn(2, 200)...) {
		r := ask(t, untrusted.s, "img.example.org", dns.TypeA, s)
		if got := answerOf(r); got != loopback {
			t.Fatalf("%s from an untrusted resolver: expected the resolver's own answer %s, got %s", s, loopback, got)
		}
		if ecs := replyECS(r); ecs == nil || ecs.SourceScope != 0 {
			t.Fatalf("%s from an untrusted resolver: expected scope 0, got %v", s, ecs)
		}
	}
	if v := counterSum(t, "coredns_gslb_ecs_total", "result", "ignored") - ignored; v != 400 {
		t.Errorf("Expected 400 ECS options ignored, got %v", v)
	}
	if d := untrusted.canary(t).Decisions; d != 1 {
		t.Errorf("Expected 400 forged subnets from one resolver counted once, got %d", d)
	}

	// explain's ADDRESS/PREFIX is a client behind a trusted resolver.
	conf := writeFile(t, untrusted.dir, "Corefile", untrusted.text)
	out, stderr, code := runTool(t, "explain", "-conf", conf, "-json", "1.0.1.0/24", "img.example.org", "A")
	var x explained
	if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil || x.Client.From != "ecs" || x.Node != "hz-a" {
		t.Errorf("Expected explain to use the ECS address under trust_ecs, got exit %d %v: %s%s", code, err, out, stderr)
	}

	trusted := startForge(t, "trust_ecs 127.0.0.0/8\ncanary "+cand+" 100 {\n rollback_cross 0.5\n}")
	for s, want := range map[string]string{"1.0.1.0/24": "192.0.2.1", "2.0.1.0/24": "192.0.2.4"} {
		r := ask(t, trusted.s, "img.example.org", dns.TypeA, s)
		if got := answerOf(r); got != want {
			t.Errorf("%s from a trusted resolver: expected %s, got %s", s, want, got)
		}
		if ecs := replyECS(r); ecs == nil || ecs.SourceScope != 24 {
			t.Errorf("%s from a trusted resolver: expected scope 24, got %v", s, ecs)
		}
	}

	for _, bad := range []string{"trust_ecs", "trust_ecs 1.2.3", "trust_ecs ::ffff:1.2.3.4"} {
		mu.Lock()
		inst, err := caddy.Start(input(strings.Replace(trusted.text, "trust_ecs 127.0.0.0/8", bad, 1)))
		mu.Unlock()
		if err == nil {
			inst.ShutdownCallbacks()
			inst.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), "trust_ecs") {
			t.Errorf("%s: expected an error naming trust_ecs, got %v", bad, err)
		}
	}
}

// TestCanarySalt: without a salt option the state file gets a fresh salt
// at the first start and keeps it: a restart picks the same subnets, and
// another deployment other subnets. A salt option makes two deployments
// pick the same; an unset variable for it is an error.
func TestCanarySalt(t *testing.T) {
	subnets := zjSubnets(1000)
	cand := writeFile(t, t.TempDir(), "candidate.yaml", canaryNodes)
	line := "canary " + cand + " 20"
	a := startAdmin(t, line)
	data, err := os.ReadFile(filepath.Join(a.dir, "state.yaml"))
	if err != nil || !strings.Contains(string(data), `"canary_salt": `) {
		t.Fatalf("Expected a canary_salt in the state file at the first start, got %q, %v", data, err)
	}
	first := inCanary(t, a, subnets)
	a.s.stop()
	a.s = startServer(t, a.text)
	if again := inCanary(t, a, subnets); !sameMembers(first, again) {
		t.Errorf("Expected the same subnets in the canary after a restart")
	}
	if again, _ := os.ReadFile(filepath.Join(a.dir, "state.yaml")); string(again) != string(data) {
		t.Errorf("Expected the state file unchanged by a restart, got %q, was %q", again, data)
	}
	a.s.stop()
	b := startAdmin(t, line)
	if sameMembers(first, inCanary(t, b, subnets)) {
		t.Errorf("Expected another deployment's salt to pick other subnets")
	}
	b.s.stop()

	t.Setenv("GSLB_TEST_CANARY_SALT", "a-secret-shared-by-the-fleet")
	withSalt := line + " {\n salt {$GSLB_TEST_CANARY_SALT}\n}"
	c := startAdmin(t, withSalt)
	shared := inCanary(t, c, subnets)
	c.s.stop()
	d := startAdmin(t, withSalt)
	if !sameMembers(shared, inCanary(t, d, subnets)) {
		t.Errorf("Expected two instances with the same salt to pick the same subnets")
	}
	if f := share(shared); f < 0.16 || f > 0.24 {
		t.Errorf("Expected 20%% ± 4%% in the canary with a salt, got %.1f%%", 100*f)
	}
	d.s.stop()

	// Neither a salt nor a state file: said at startup.
	logs := captureLog(t)
	dir := t.TempDir()
	city, asn := adminDBs(t, dir)
	startServer(t, corefile(city, asn, writeFile(t, dir, "nodes.yaml", adminNodes), line)).stop()
	if !strings.Contains(logs.String(), "canary's subnets are drawn anew at every start") {
		t.Errorf("Expected a warning that the canary's subnets change at every start")
	}

	t.Setenv("GSLB_TEST_CANARY_SALT", "")
	mu.Lock()
	inst, err := caddy.Start(input(d.text))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "salt must be a secret") {
		t.Errorf("Expected an unset salt variable to be an error, got %v", err)
	}
}

func sameMembers(a, b map[string]bool) bool {
	for s, in := range a {
		if b[s] != in {
			return false
		}
	}
	return len(a) == len(b)
}

// TestExplainCanarySalt: explain reads the salt the server kept in the
// state file, so it names the server's policy for each subnet; without a
// kept salt it says that its draw is not the server's.
func TestExplainCanarySalt(t *testing.T) {
	cand := writeFile(t, t.TempDir(), "candidate.yaml", canaryNodes)
	e := startAdmin(t, "canary "+cand+" 50")
	conf := writeFile(t, e.dir, "Corefile", e.text)
	subnets := zjSubnets(24)
	server := inCanary(t, e, subnets)
	for _, s := range subnets {
		out, stderr, code := runTool(t, "explain", "-conf", conf, "-json", s, "www.example.org", "A")
		if code != 0 {
			t.Fatalf("explain %s: exit %d: %s", s, code, stderr)
		}
		var x struct {
			Policy string
			Notes  []string
		}
		if err := json.Unmarshal([]byte(out), &x); err != nil {
			t.Fatalf("explain %s: %v\n%s", s, err, out)
		}
		if want := map[bool]string{true: "canary", false: "stable"}[server[s]]; x.Policy != want {
			t.Errorf("%s: explain says %s, the server decided %s", s, x.Policy, want)
		}
		if strings.Contains(strings.Join(x.Notes, "\n"), "salt") {
			t.Errorf("%s: unexpected salt note with a kept salt: %v", s, x.Notes)
		}
	}
	// A Corefile without the state file: the tool's salt is its own.
	noState := writeFile(t, e.dir, "Corefile.nostate", strings.Replace(e.text, "state "+filepath.Join(e.dir, "state.yaml"), "", 1))
	out, stderr, code := runTool(t, "explain", "-conf", noState, subnets[0], "www.example.org", "A")
	if code != 0 || !strings.Contains(out, "salt is not kept yet") {
		t.Errorf("Expected a note that the salt is not kept, got exit %d: %s%s", code, out, stderr)
	}
}

// TestCanarySaltOfBadStateFile: a state file whose entries do not load
// keeps its canary_salt: the canary picks the subnets that salt picks, and
// explain does not say there is none. Removing the file and reloading the
// Corefile keeps the salt (and writes it back).
func TestCanarySaltOfBadStateFile(t *testing.T) {
	subnets := zjSubnets(400)
	salt := strings.Repeat("5a1t", 16)
	cand := writeFile(t, t.TempDir(), "candidate.yaml", canaryNodes)
	line := "canary " + cand + " 30"

	ref := startAdmin(t, line+" {\n salt "+salt+"\n}")
	want := inCanary(t, ref, subnets)
	ref.s.stop()

	logs := captureLog(t)
	bad := `{"pins": [{"cidr": "2.0.0.0/24", "nodes": ["sh"], "colour": "red"}], "canary_salt": "` + salt + `"}` + "\n"
	e := startAdminState(t, adminNodes, bad, line)
	if !sameMembers(want, inCanary(t, e, subnets)) {
		t.Errorf("Expected the bad state file's salt to pick the subnets")
	}
	if strings.Contains(logs.String(), "no readable admin state file") {
		t.Errorf("Expected no warning that there is no salt, got\n%s", logs.String())
	}
	conf := writeFile(t, e.dir, "Corefile", e.text)
	out, stderr, code := runTool(t, "explain", "-conf", conf, subnets[0], "www.example.org", "A")
	if code != 0 || strings.Contains(out, "salt is not kept") {
		t.Errorf("Expected explain to use the state file's salt without a note, got exit %d: %s%s", code, out, stderr)
	}

	state := filepath.Join(e.dir, "state.yaml")
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	e.s.restart(t, e.text+"\n")
	if !sameMembers(want, inCanary(t, e, subnets)) {
		t.Errorf("Expected the same subnets after the file was removed and the Corefile reloaded")
	}
	if data, err := os.ReadFile(state); err != nil || !strings.Contains(string(data), salt) {
		t.Errorf("Expected the salt written back to the state file, got %q, %v", data, err)
	}
}

// TestTrustECSHostBits: trust_ecs refuses a network with host bits set,
// as pins do, naming the network meant.
func TestTrustECSHostBits(t *testing.T) {
	mu.Lock()
	inst, err := caddy.Start(input(demoCorefile(t, "trust_ecs 192.0.2.53 10.0.0.1/8")))
	mu.Unlock()
	if err == nil {
		inst.ShutdownCallbacks()
		inst.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "trust_ecs: 10.0.0.1/8 has bits set after the prefix (the network is 10.0.0.0/8)") {
		t.Errorf("Expected trust_ecs 10.0.0.1/8 refused with the network suggested, got %v", err)
	}
}
