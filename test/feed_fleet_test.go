package test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// Rows posted to one member of a fleet move the answers of all three
// within a cycle, through the fleet's Redis Stream; with Redis down the
// members keep their cells until they go stale, then decide as before,
// with a Warning.
func TestFeedFleet(t *testing.T) {
	e := newFleetEnv(t)
	const edgeToken = "hz-edge-token-5f1c9a7e3b2d4068"
	tokenFile := writeFile(t, e.dir, "edge.token", edgeToken+"\n")
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf(`feed {
            cycle 200ms
            max_age 8s
            min_samples 10
            source hz {
                token_file %s
                nodes hz-*
            }
        }`, tokenFile)
	a := e.start(t, "a", "vantage telecom ZJ", extra)
	b := e.start(t, "b", "vantage telecom", extra)
	c := e.start(t, "c", "vantage telecom", extra)
	members := []*fleetMember{a, b, c}
	answers := func() string {
		var out []string
		for _, m := range members {
			ans, err := m.query("www.example.org", "1.3.0.0/24")
			if err != nil {
				ans = err.Error()
			}
			out = append(out, m.name+"="+ans)
		}
		return strings.Join(out, " ")
	}
	const before, moved = "a=192.0.2.1 b=192.0.2.1 c=192.0.2.1", "a=192.0.2.3 b=192.0.2.3 c=192.0.2.3"
	if got := answers(); got != before {
		t.Fatalf("Answers before the feed: %s, want %s", got, before)
	}
	// Half of hz-a's answers to Zhejiang telecom are 5xx, posted to b.
	row := fmt.Sprintf(`{"node":"hz-a","start":%q,"seconds":60,"province":"ZJ","isp":"telecom","requests":1000,"errors":500,"ttfb_p50_ms":20,"ttfb_p95_ms":60}`,
		time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	code, out := b.callToken(t, "POST", "/v1/feed", edgeToken, row)
	if code != 200 || !strings.Contains(out, `"accepted": 1`) {
		t.Fatalf("POST /v1/feed to b: %d %s", code, out)
	}
	posted := time.Now()
	testsupport.WaitFor(t, "every member to move Zhejiang telecom off hz-a", func() (bool, string) {
		got := answers()
		return got == moved, got
	})
	t.Logf("All three members moved %s after the POST to b", time.Since(posted).Round(10*time.Millisecond))

	// Redis goes away: the cells hold until max_age, then the members
	// answer as before, and say why.
	e.redis.Stop()
	if got := answers(); got != moved {
		t.Errorf("Answers just after Redis stopped: %s, want the cells kept: %s", got, moved)
	}
	deadline := time.Now().Add(40 * time.Second)
	for answers() != before {
		if time.Now().After(deadline) {
			t.Fatalf("The members never went back after the cells went stale: %s", answers())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if stale := time.Since(posted); stale < 8*time.Second {
		t.Errorf("The members went back %s after the rows, before max_age (8s)", stale)
	}
	for _, m := range []*fleetMember{a, c} {
		if !strings.Contains(m.out.String(), "[WARNING] plugin/gslb: feed: cannot read the fleet's stream") {
			t.Errorf("%s logged no Warning about the stream:\n%s", m.name, m.out.String())
		}
	}
}
