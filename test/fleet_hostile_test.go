package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"

	"github.com/redis/go-redis/v9"
)

// TestFleetHostileWriter: a writer of the fleet's keys left, before the
// members started, a probe lease of hz-a held by a non-member without a
// TTL, and two reports from the future saying hz-a is down for telecom.
// The members repair both at once (and count them): hz-a is probed, and
// served to its telecom clients, instead of neither for ever.
func TestFleetHostileWriter(t *testing.T) {
	e := newFleetEnv(t)
	e.vantageDBs(t)
	target := newSourceTarget(t)
	e.nodes = writeFile(t, e.dir, "nodes.yaml", vantageNodes(target.url()))
	rc := redis.NewClient(&redis.Options{Addr: e.redis.Addr()})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	const p = "gslb:fleet:{test}:"
	ahead := now.Add(10 * 365 * 24 * time.Hour).UnixMilli()
	for _, x := range []string{"x", "y"} {
		rc.HSet(ctx, p+"verdicts", x, fmt.Sprintf(`{"member":%q,"vantage":{"carrier":"telecom"},"interval_ms":1000,"nodes":{"hz-a":{"down":true}}}`, x))
		rc.HSet(ctx, p+"verdicts:at", x, ahead)
	}
	if err := rc.Set(ctx, p+"lease:telecom:hz-a:0", "mallory", 0).Err(); err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	a := e.start(t, "a", "vantage telecom\nprobers 1\nprobe_source 127.0.0.3", "")
	b := e.start(t, "b", "vantage telecom\nprobers 1\nprobe_source 127.0.0.4", "")
	ms := []*fleetMember{a, b}
	testsupport.WaitFor(t, "hz-a probed", func() (bool, string) {
		got := target.sources(from)
		return len(got) > 0, fmt.Sprint(got)
	})
	within(t, promptly, "hz-a served to Zhejiang Telecom", ms, "www.example.org", "1.3.0.0/24", equal("192.0.2.1"))
	testsupport.WaitFor(t, "the repairs counted", func() (bool, string) {
		var lease, report float64
		for _, m := range ms {
			l, _ := m.metric(t, "coredns_gslb_fleet_repaired_total", `kind="lease"`)
			r, _ := m.metric(t, "coredns_gslb_fleet_repaired_total", `kind="report"`)
			lease, report = lease+l, report+r
		}
		return lease >= 1 && report >= 2, fmt.Sprint(lease, report)
	})
	// It stays so: the forged entries are gone.
	p2 := startProber(ms...)
	time.Sleep(2 * time.Second) // two probe intervals of answers
	p2.check(t)
	for _, m := range ms {
		if got, err := m.query("www.example.org", "1.3.0.0/24"); err != nil || got != "192.0.2.1" {
			t.Errorf("%s: hz-a not served to Zhejiang Telecom: %s %v", m.name, got, err)
		}
	}
	if n, _ := rc.HLen(ctx, p+"verdicts:at").Result(); n > 2 {
		t.Errorf("Expected the forged report times deleted, %d left", n)
	}
}

// TestFleetTLS: two members share a drain through a Redis that answers TLS
// only, its certificate signed by a CA the members trust through
// SSL_CERT_FILE, as the README's lock-down says.
func TestFleetTLS(t *testing.T) {
	rs := testredis.StartTLS(t)
	t.Setenv("SSL_CERT_FILE", rs.CAFile)
	e := newFleetEnv(t)
	var ms []*fleetMember
	for _, name := range []string{"a", "b"} {
		m := &fleetMember{name: name, dns: testsupport.FreeAddr(t), admin: testsupport.FreeAddr(t), metrics: testsupport.FreeAddr(t), redis: rs.Addr(), redisOpts: "tls"}
		m.conf = writeFile(t, e.dir, name+".Corefile", e.corefile(m, "vantage telecom", ""))
		m.launch(t)
		ms = append(ms, m)
	}
	ms[0].must(t, "POST", "/v1/nodes/hz-a/drain", "")
	within(t, promptly, "the drain through TLS", ms, "www.example.org", "1.3.0.0/24", not("192.0.2.1"))
	testsupport.WaitFor(t, "2 members over TLS", func() (bool, string) {
		v, _ := ms[1].metric(t, "coredns_gslb_fleet_members")
		return v == 2, fmt.Sprint(v)
	})
}
