package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gslbdns/gslb/internal/testredis"
	"github.com/gslbdns/gslb/internal/testsupport"
)

func ahead(d time.Duration) func(*Config) {
	return func(c *Config) { c.Now = func() time.Time { return time.Now().Add(d) } }
}

// TestFastClockDoesNotBeatLaterChange: a, an hour fast, drains; b, cut
// off, undrains 50 ms later in real time: b's change is the later one and
// holds on both. a's skew is measured and counted.
func TestFastClockDoesNotBeatLaterChange(t *testing.T) {
	rs := testredis.Start(t)
	a := start(t, rs, "a", telecom, ahead(time.Hour))
	px := testredis.NewProxy(t, rs.Addr())
	b := startVia(t, px, "b", unicom, nil)
	px.Cut()
	a.Set(drain("n1"))
	testsupport.WaitFor(t, "a's drain accepted", func() (bool, string) { return a.Stats().Pending == 0, fmt.Sprint(a.Stats()) })
	time.Sleep(50 * time.Millisecond) // the gap between the two changes is the scenario
	b.Set(undrain("n1"))
	px.Restore()
	testsupport.WaitFor(t, "b's later undrain on both", all([]*member{a, b}, func(m *member) (bool, string) {
		e, ok := m.State().Entries["drain/n1"]
		return ok && e.Deleted() && e.Origin.Member == "b", fmt.Sprintf("%s: %+v", m.cfg.Member, e)
	}))
	s := a.Stats().Clock
	if !s.Sampled || s.Skews == 0 || s.Offset > -59*time.Minute || s.Offset < -61*time.Minute {
		t.Errorf("Expected a's clock measured an hour ahead of Redis's and counted, got %+v", s)
	}
	if s := b.Stats().Clock; s.Skews != 0 || s.Offset > MaxSkew || s.Offset < -MaxSkew {
		t.Errorf("Expected b's clock in sync, got %+v", s)
	}
}

// TestFastClockDoesNotChurn: a member 31 days fast keeps a deletion the
// others keep (deletions age on Redis's clock): the state is not written
// again and again.
func TestFastClockDoesNotChurn(t *testing.T) {
	rs := testredis.Start(t)
	b := start(t, rs, "b", unicom, nil)
	b.Set(drain("n1"))
	b.Set(undrain("n1"))
	testsupport.WaitFor(t, "b's undrain in Redis", func() (bool, string) { return b.Stats().Pending == 0, fmt.Sprint(b.Stats()) })
	a := start(t, rs, "a", telecom, ahead(31*24*time.Hour))
	c := client(t, rs)
	ps := c.Subscribe(context.Background(), a.keys.changes)
	defer ps.Close()
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Set(drain("n2")) // one write, then quiet
	testsupport.WaitFor(t, "a's drain on b", func() (bool, string) { return has(b, "drain/n2", "") })
	writes := 0
	deadline := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case <-ps.Channel():
			writes++
		case <-deadline:
			done = true
		}
	}
	if writes > 2 {
		t.Errorf("Expected the state left alone after a's change, got %d writes in 2s", writes)
	}
	e, ok := a.State().Entries["drain/n1"]
	if !ok || !e.Deleted() {
		t.Errorf("Expected a to keep b's deletion, got %+v %v", e, ok)
	}
}

// TestSkewCounted: the first read far off logs once and counts; a clock
// back in sync logs that too.
func TestSkewCounted(t *testing.T) {
	f := &Fleet{cfg: Config{Name: "t"}, now: time.Now}
	at := time.Unix(1700000000, 0)
	f.sampleClock("1700000010", "0", at, at) // 10s behind Redis
	f.sampleClock("1700000010", "0", at, at)
	if s := f.clk.stats(); s.Skews != 2 || s.Offset != 10*time.Second || !f.clk.skewed {
		t.Errorf("Expected 2 skews of 10s, got %+v", s)
	}
	f.sampleClock("1700000000", "500000", at, at.Add(time.Second)) // in sync: the middle of the call
	if s := f.clk.stats(); s.Skews != 2 || s.Offset != 0 || f.clk.skewed {
		t.Errorf("Expected the clocks in sync again, got %+v", s)
	}
	f.sampleClock("x", "0", at, at)
	if s := f.clk.stats(); s.Offset != 0 {
		t.Errorf("Expected a bad TIME ignored, got %+v", s)
	}
	// A fast member stamps with Redis's time; a slow one with its own.
	f.now = func() time.Time { return time.Now().Add(time.Hour) }
	f.clk.offset.Store(int64(-time.Hour))
	if d := time.Since(f.clock()); d > time.Minute || d < -time.Minute {
		t.Errorf("Expected a fast member's stamp near Redis's time, %v off", d)
	}
	f.now = func() time.Time { return time.Now().Add(-time.Hour) }
	f.clk.offset.Store(int64(time.Hour))
	if d := time.Since(f.clock()); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("Expected a slow member's stamp its own time, an hour behind, got %v", d)
	}
}
