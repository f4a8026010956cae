package test

import (
	"encoding/json"
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
	e, extra := newFeedFleet(t)
	a := e.start(t, "a", "vantage telecom ZJ", extra)
	b := e.start(t, "b", "vantage telecom", extra)
	c := e.start(t, "c", "vantage telecom", extra)
	members := []*fleetMember{a, b, c}
	answers := func() string { return feedAnswers(members) }
	if got := answers(); got != feedBefore {
		t.Fatalf("Answers before the feed: %s, want %s", got, feedBefore)
	}
	// Half of hz-a's answers to Zhejiang telecom are 5xx, posted to b.
	posted := postErrors(t, b)
	testsupport.WaitFor(t, "every member to move Zhejiang telecom off hz-a", func() (bool, string) {
		got := answers()
		return got == feedMoved, got
	})
	t.Logf("All three members moved %s after the POST to b", time.Since(posted).Round(10*time.Millisecond))

	// Redis goes away: the cells hold until max_age, then the members
	// answer as before, and say why.
	e.redis.Stop()
	if got := answers(); got != feedMoved {
		t.Errorf("Answers just after Redis stopped: %s, want the cells kept: %s", got, feedMoved)
	}
	deadline := time.Now().Add(40 * time.Second)
	for answers() != feedBefore {
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

// What the members answer Zhejiang telecom before and after hz-a's errors.
const feedBefore, feedMoved = "a=192.0.2.1 b=192.0.2.1 c=192.0.2.1", "a=192.0.2.3 b=192.0.2.3 c=192.0.2.3"

const feedEdgeToken = "hz-edge-token-5f1c9a7e3b2d4068"

// newFeedFleet is a fleet whose members' feed block is the second value.
func newFeedFleet(t *testing.T) (*fleetEnv, string) {
	e := newFleetEnv(t)
	tokenFile := writeFile(t, e.dir, "edge.token", feedEdgeToken+"\n")
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	return e, fmt.Sprintf(`feed {
            cycle 200ms
            max_age 8s
            min_samples 10
            source hz {
                token_file %s
                nodes hz-*
            }
        }`, tokenFile)
}

// feedAnswers is each member's answer to Zhejiang telecom.
func feedAnswers(members []*fleetMember) string {
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

// postErrors posts to m a row of hz-a's last minute for Zhejiang telecom,
// half of it 5xx, and returns when.
func postErrors(t *testing.T, m *fleetMember) time.Time {
	t.Helper()
	row := fmt.Sprintf(`{"node":"hz-a","start":%q,"seconds":60,"province":"ZJ","isp":"telecom","requests":1000,"errors":500,"ttfb_p50_ms":20,"ttfb_p95_ms":60}`,
		time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	code, out := m.callToken(t, "POST", "/v1/feed", feedEdgeToken, row)
	if code != 200 || !strings.Contains(out, `"accepted": 1`) {
		t.Fatalf("POST /v1/feed to %s: %d %s", m.name, code, out)
	}
	return time.Now()
}

// A member that starts after the rows, and one that restarts, fold the
// stream's entries still within max_age: they decide from the same cells
// as the others, each row once, their own previous process's included.
func TestFeedFleetMemberCatchesUp(t *testing.T) {
	e, extra := newFeedFleet(t)
	a := e.start(t, "a", "vantage telecom ZJ", extra)
	b := e.start(t, "b", "vantage telecom", extra)
	postErrors(t, a)
	testsupport.WaitFor(t, "b to move Zhejiang telecom off hz-a", func() (bool, string) {
		got := feedAnswers([]*fleetMember{b})
		return got == "b=192.0.2.3", got
	})
	a.stop()
	a = e.start(t, "a", "vantage telecom ZJ", extra)
	c := e.start(t, "c", "vantage telecom", extra)
	members := []*fleetMember{a, b, c}
	testsupport.WaitFor(t, "the new and the restarted member to move too", func() (bool, string) {
		got := feedAnswers(members)
		return got == feedMoved, got
	})
	for _, m := range []*fleetMember{a, c} {
		var cells struct {
			Cells []struct {
				Node, State string
				Samples     float64
			}
		}
		code, out := m.call(t, "GET", "/v1/feed", "")
		if err := json.Unmarshal([]byte(out), &cells); code != 200 || err != nil {
			t.Fatalf("%s: GET /v1/feed: %d %s %v", m.name, code, out, err)
		}
		// 1000 requests, decayed by a minute's half-life since: folded once.
		if len(cells.Cells) != 1 || cells.Cells[0].Node != "hz-a" || cells.Cells[0].State != "fresh" || cells.Cells[0].Samples > 1000 || cells.Cells[0].Samples < 500 {
			t.Errorf("%s: cells %s, want one fresh cell of hz-a with 500 to 1000 samples", m.name, out)
		}
	}
}
