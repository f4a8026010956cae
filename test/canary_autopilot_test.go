package test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/table"
)

// autopilotState is what the test reads of GET /v1/canary.
type autopilotState struct {
	Percent    float64 `json:"percent"`
	RolledBack bool    `json:"rolled_back"`
	Reason     string  `json:"reason"`
	Autopilot  struct {
		Step     int       `json:"step"`
		Percent  float64   `json:"step_percent"`
		Since    time.Time `json:"since"`
		Paused   bool      `json:"paused"`
		Complete bool      `json:"complete"`
		History  []struct {
			Action  string  `json:"action"`
			Percent float64 `json:"percent"`
		} `json:"history"`
	} `json:"autopilot"`
}

func pilotOf(t *testing.T, m *fleetMember) autopilotState {
	t.Helper()
	var s autopilotState
	if err := json.Unmarshal([]byte(m.must(t, "GET", "/v1/canary", "")), &s); err != nil {
		t.Fatalf("GET /v1/canary on %s: %v", m.name, err)
	}
	return s
}

// autopilotNets are the Zhejiang telecom /24s the edge reports on.
func autopilotNets() []netip.Prefix {
	var out []netip.Prefix
	for i := range 1000 {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{1, byte(40 + i/256), byte(i), 0}), 24))
	}
	return out
}

// postCohorts posts one window of hz-a's rows for every /24 to m: 100
// requests each, 0.1% of them 5xx, and canaryErrs of those in the canary
// at percent (by the fleet's salt).
func postCohorts(t *testing.T, m *fleetMember, percent, canaryErrs float64) {
	t.Helper()
	picker := canary.New(config.Canary{File: "x", Percent: percent, RollbackCross: -1, Window: time.Minute}, &table.Table{}, canary.KeysOf(autopilotSalt))
	start := time.Now().UTC().Format(time.RFC3339Nano)
	var b strings.Builder
	for _, p := range autopilotNets() {
		errs := 0.1
		if picker.Picks(locate.KeyOf(p.Addr())) {
			errs = canaryErrs * 100
		}
		fmt.Fprintf(&b, `{"node":"hz-a","start":%q,"seconds":1,"client":%q,"requests":100,"errors":%g,"hits":90,"ttfb_p50_ms":30,"ttfb_p95_ms":90}`+"\n", start, p, errs)
	}
	code, out := m.callToken(t, "POST", "/v1/feed", feedEdgeToken, b.String())
	if code != 200 {
		t.Fatalf("POST /v1/feed to %s: %d %s", m.name, code, out)
	}
}

const autopilotSalt = "0123456789abcdef0123" // the fleet's canary salt

// TestCanaryAutopilotFleet: three CoreDNS members, a real redis-server and
// the feed. A candidate as good as stable advances 1 → 5 → 20 on a short
// dwell, on every member; a member restarted mid-step resumes the same
// step and dwell clock; the API pauses and resumes the autopilot for the
// fleet; rows that show the candidate's clients getting 5xx roll it back
// on every member; a member restarted while Redis is down keeps it.
func TestCanaryAutopilotFleet(t *testing.T) {
	e := newFleetEnv(t)
	tokenFile := writeFile(t, e.dir, "edge.token", feedEdgeToken+"\n")
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf(`feed {
            cycle 200ms
            max_age 1m
            min_samples 10
            source hz {
                token_file %s
                nodes hz-*
                rate 1000000
            }
        }`, tokenFile)
	e.canaryPercent = "plan"
	e.canaryOpts = "steps 1 5 20 50 100\n            dwell 2s\n            guard error_rate +0.2\n            guard ttfb_p50 +10%\n            min_samples 500"
	a := e.start(t, "a", "vantage telecom ZJ", extra)
	b := e.start(t, "b", "vantage telecom", extra)
	c := e.start(t, "c", "vantage telecom", extra)
	members := []*fleetMember{a, b, c}

	// A good candidate: the same 5xx in both cohorts.
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; ; i++ {
		s := pilotOf(t, a)
		if s.Autopilot.Percent >= 20 {
			break
		}
		if s.RolledBack || time.Now().After(deadline) {
			t.Fatalf("The good candidate did not reach 20%%: %+v", s)
		}
		postCohorts(t, members[i%3], s.Percent, 0.001)
		time.Sleep(300 * time.Millisecond)
	}
	testsupport.WaitFor(t, "every member at the 20% step or past it", func() (bool, string) {
		var got []string
		ok := true
		for _, m := range members {
			s := pilotOf(t, m)
			got = append(got, fmt.Sprintf("%s=%g", m.name, s.Percent))
			ok = ok && s.Autopilot.Percent >= 20 && !s.RolledBack
		}
		return ok, strings.Join(got, " ")
	})
	var steps []float64
	for _, h := range pilotOf(t, a).Autopilot.History {
		if h.Action == canary.ActionAdvance {
			steps = append(steps, h.Percent)
		}
	}
	if len(steps) < 2 || steps[0] != 5 || steps[1] != 20 {
		t.Errorf("Expected the history to advance to 5 then 20, got %v", steps)
	}
	if !strings.Contains(a.out.String()+b.out.String()+c.out.String(), "advanced to 20% of the subnets") {
		t.Error("No member logged the step to 20%")
	}

	// c restarts mid-step: it resumes the fleet's step and its start.
	before := pilotOf(t, a).Autopilot
	c.stop()
	c.launch(t)
	testsupport.WaitFor(t, "c to resume the fleet's step", func() (bool, string) {
		got, want := pilotOf(t, c).Autopilot, pilotOf(t, a).Autopilot
		return got.Step == want.Step && got.Since.Equal(want.Since) && got.Step >= before.Step, fmt.Sprintf("c %d since %s, a %d since %s", got.Step, got.Since, want.Step, want.Since)
	})

	// Paused through b's API, for the fleet; resumed through c's.
	b.must(t, "POST", "/v1/canary", `{"autopilot": "pause"}`)
	testsupport.WaitFor(t, "every member paused", func() (bool, string) {
		for _, m := range members {
			if !pilotOf(t, m).Autopilot.Paused {
				return false, m.name + " is not paused"
			}
		}
		return true, ""
	})
	c.must(t, "POST", "/v1/canary", `{"autopilot": "resume"}`)
	testsupport.WaitFor(t, "every member running again", func() (bool, string) {
		for _, m := range members {
			if pilotOf(t, m).Autopilot.Paused {
				return false, m.name + " is still paused"
			}
		}
		return true, ""
	})

	// The candidate's clients get 5% 5xx: it rolls back on every member.
	deadline = time.Now().Add(60 * time.Second)
	for i := 0; !pilotOf(t, a).RolledBack; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("The bad candidate never rolled back: %+v", pilotOf(t, a))
		}
		postCohorts(t, members[i%3], pilotOf(t, a).Percent, 0.05)
		time.Sleep(300 * time.Millisecond)
	}
	testsupport.WaitFor(t, "every member rolled back", func() (bool, string) {
		for _, m := range members {
			s := pilotOf(t, m)
			if !s.RolledBack || s.Percent != 0 || !strings.Contains(s.Reason, "guard error_rate +0.2 breached in ZJ/telecom") {
				return false, fmt.Sprintf("%s: %+v", m.name, s)
			}
		}
		return true, ""
	})
	t.Logf("Rolled back: %s", pilotOf(t, b).Reason)

	// With Redis gone, a member that restarts takes the rollback and the
	// history up from its state file.
	want := pilotOf(t, b)
	e.redis.Stop()
	b.stop()
	b.launch(t)
	got := pilotOf(t, b)
	if !got.RolledBack || got.Reason != want.Reason || len(got.Autopilot.History) != len(want.Autopilot.History) {
		t.Errorf("After a restart without Redis: %+v, want the rollback and history of before: %+v", got, want)
	}
}

// TestCanaryAutopilotReloadAndAPI: through the admin API a share set by
// hand pauses the autopilot and a resume starts it from the step at or
// below that share; a Corefile reload during the step keeps the step and
// its start, and one that changes the plan starts it afresh.
func TestCanaryAutopilotReloadAndAPI(t *testing.T) {
	e := startFeed(t, "")
	cand := writeFile(t, e.dir, "candidate.yaml", feedNodes)
	withPlan := func(dwell string) string {
		return strings.Replace(e.text, "weights 0.4 0.2 0.1 0.3", "weights 0.4 0.2 0.1 0.3\n        canary "+cand+
			" {\n            salt "+autopilotSalt+"\n            steps 1 5 20\n            dwell "+dwell+"\n            guard error_rate +0.2\n        }", 1)
	}
	text := withPlan("1h")
	e.s.restart(t, text)
	get := func() autopilotState {
		t.Helper()
		code, out := e.call(t, "GET", "/v1/canary", e.token, "")
		var s autopilotState
		if code != 200 || json.Unmarshal([]byte(out), &s) != nil {
			t.Fatalf("GET /v1/canary: %d %s", code, out)
		}
		return s
	}
	post := func(body string) autopilotState {
		t.Helper()
		code, out := e.call(t, "POST", "/v1/canary", e.token, body)
		var s autopilotState
		if code != 200 || json.Unmarshal([]byte(out), &s) != nil {
			t.Fatalf("POST /v1/canary %s: %d %s", body, code, out)
		}
		return s
	}
	if s := get(); s.Percent != 1 || s.Autopilot.Step != 0 || s.Autopilot.Paused {
		t.Fatalf("Expected the autopilot at its first step, 1%%, got %+v", s)
	}
	if s := post(`{"percent": 7}`); s.Percent != 7 || !s.Autopilot.Paused {
		t.Fatalf("Expected a share set by hand to pause the autopilot at 7%%, got %+v", s)
	}
	if code, out := e.call(t, "POST", "/v1/canary", e.token, `{"autopilot": "onward"}`); code != 400 {
		t.Errorf("Expected 400 for an unknown autopilot action, got %d %s", code, out)
	}
	s := post(`{"autopilot": "resume"}`)
	if s.Percent != 5 || s.Autopilot.Step != 1 || s.Autopilot.Paused {
		t.Fatalf("Expected a resume at the step below 7%%: 5%%, step 1, got %+v", s)
	}
	since := s.Autopilot.Since

	e.s.restart(t, text+"\n")
	if got := get(); got.Percent != 5 || got.Autopilot.Step != 1 || !got.Autopilot.Since.Equal(since) {
		t.Errorf("After a reload with the same plan: %+v, want step 1 at 5%% since %s", got, since)
	}
	e.s.restart(t, withPlan("2h"))
	if got := get(); got.Percent != 1 || got.Autopilot.Step != 0 || !got.Autopilot.Since.After(since) {
		t.Errorf("After a reload with another plan: %+v, want a fresh start at 1%%", got)
	}
}
