package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/locate"
)

// checkFleetACL runs the README's ACL line against a real redis-server,
// has two members of its fleet and the location cache work as that user
// (state, verdicts, leases, the cache's writes), and checks that the user
// can touch nothing else.
func (r *readmeRun) checkFleetACL(t *testing.T, b readmeBlock) {
	rs := testredis.Start(t)
	line := strings.TrimSpace(b.text())
	const host = "redis-cli -h 10.0.0.5 "
	if !strings.HasPrefix(line, host) || strings.Count(line, "\n") != 0 {
		t.Fatalf("README line %d: expected one line starting %q", b.line, host)
	}
	line = fmt.Sprintf("redis-cli -h 127.0.0.1 -p %d ", rs.Port()) + strings.TrimPrefix(line, host)
	if out, err := exec.Command("bash", "-c", line).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("README line %d: %v: %s", b.line, err, out)
	}
	cfg := &locate.RedisConfig{Addrs: []string{rs.Addr()}, Username: "gslb-cdn-prod", Password: "CHANGE-ME-to-a-long-secret", Timeout: time.Second}
	var ms []*fleet.Fleet
	for _, id := range []string{"a", "b"} {
		c := locate.NewRedisClient(cfg)
		t.Cleanup(func() { c.Close() })
		f, err := fleet.Start(fleet.Config{Name: "cdn-prod", Member: id, Vantage: fleet.Vantage{Carrier: "telecom"}, Client: c,
			ProbeInterval: 400 * time.Millisecond, Probers: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		f.SetNodes([]string{"n1"})
		ms = append(ms, f)
	}
	a, bm := ms[0], ms[1]
	if _, err := a.Set(fleet.Change{Key: "drain/n1", Value: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var last string
	if !poll(30*time.Second, func() bool {
		for _, f := range ms {
			f.Report(map[string]fleet.NodeVerdict{"n1": {Down: true}})
		}
		_, drained := bm.State().Get("drain/n1")
		d := bm.Verdicts().Carriers("n1")["telecom"]
		sa, sb := a.Stats(), bm.Stats()
		last = fmt.Sprintf("drained %v, verdict %+v, probing %v %v, errors %q %q", drained, d, a.Probing("n1"), bm.Probing("n1"), sa.LastError, sb.LastError)
		return drained && d.Votes == 2 && a.Probing("n1") != bm.Probing("n1") && sa.LastError == "" && sb.LastError == "" && sb.Members == 2
	}) {
		t.Fatalf("README line %d: the fleet as the ACL user: %s", b.line, last)
	}
	c := locate.NewRedisClient(cfg)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.HSet(ctx, "gslb:geo:v1:1.2", "3", "x").Err(); err != nil {
		t.Errorf("README line %d: the location cache's write as the ACL user: %v", b.line, err)
	}
	for _, cmd := range [][]any{{"SET", "other", "x"}, {"HSET", "gslb:fleet:{other}:state", "doc", "x"}, {"FLUSHALL"}, {"CONFIG", "SET", "save", ""}, {"KEYS", "*"}} {
		if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("README line %d: %v as the ACL user: got %v, want NOPERM", b.line, cmd, err)
		}
	}
}
