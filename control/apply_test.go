package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/runstate"
)

// drainedIn is whether node id is drained in view v.
func drainedIn(v *policy.View, id string) bool {
	i, ok := v.Table.Index(id)
	return ok && v.Status[i].State == policy.StateDrained
}

// startedWithState is a started instance of the fixture with an admin
// API and the path of its state file.
func startedWithState(t *testing.T) (*Control, string) {
	t.Helper()
	dir := fixture(t, fixtureNodes)
	state := filepath.Join(dir, "state.yaml")
	c := newTestControl(t, dir, fmt.Sprintf(fixtureBlock, "admin 127.0.0.1:0 {\n state "+state+"\n}\n"))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, state
}

// TestApplyAsOne: Apply drains two nodes and pins a network as one change:
// a poller of the views never sees one node drained without the other;
// the state file holds all of it. A change whose part does not hold (an
// unknown node) is refused whole, and changes nothing.
func TestApplyAsOne(t *testing.T) {
	c, state := startedWithState(t)
	var mixed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := c.view.Load()
			if drainedIn(v, "hz-a") != drainedIn(v, "hz-b") {
				mixed.Add(1)
			}
		}
	}()
	pin, _ := json.Marshal(runstate.Pin{CIDR: "1.2.3.0/24", Nodes: []string{"bj"}})
	for i := range 20 {
		drained := i%2 == 0
		err := c.Apply("test", runstate.SetDrain("hz-a", drained, time.Now()), runstate.SetDrain("hz-b", drained, time.Now()),
			runstate.Change{Key: "pin/1.2.3.0/24", Value: pin})
		if err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	if n := mixed.Load(); n != 0 {
		t.Errorf("Expected no view with one of the two drained, saw %d", n)
	}
	v := c.view.Load()
	if drainedIn(v, "hz-a") || drainedIn(v, "hz-b") {
		t.Errorf("Expected both undrained after 20 rounds")
	}
	if a := answerOf(t, c, "www.example.org", "1.2.3.0/24"); a != "192.0.2.4" {
		t.Errorf("Expected the pin to bj, got %s", a)
	}
	if err := c.Apply("test", runstate.SetDrain("hz-a", true, time.Now())); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(state)
	if !strings.Contains(string(data), `"node":"hz-a"`) || !strings.Contains(string(data), `"cidr":"1.2.3.0/24"`) {
		t.Errorf("Expected the drain and the pin in the state file, got\n%s", data)
	}
	err := c.Apply("test", runstate.SetDrain("hz-b", true, time.Now()), runstate.SetDrain("nope", true, time.Now()))
	if err == nil || !errors.As(err, new(*admin.BadRequest)) || !strings.Contains(err.Error(), "drain/nope") {
		t.Fatalf("Expected a bad request naming drain/nope, got %v", err)
	}
	if drainedIn(c.view.Load(), "hz-b") {
		t.Errorf("Expected the refused change to drain nothing")
	}
	for _, bad := range []runstate.Change{{Key: "salt", Value: json.RawMessage(`"x"`)}, {Key: "plan/x", Value: json.RawMessage(`{}`)}} {
		if err := c.Apply("test", bad); err == nil {
			t.Errorf("Expected %s refused", bad.Key)
		}
	}
}

// TestApplyRampsAndPlans: an undrain through Apply ramps back over the
// cooldown, as the drain API's does; a drain kept keeps its time; a plan is
// a key Apply takes, kept in the state file.
func TestApplyRampsAndPlans(t *testing.T) {
	c, state := startedWithState(t)
	since := time.Now().Add(-time.Hour)
	if err := c.Apply("test", runstate.SetDrain("hz-a", true, since)); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("test", runstate.SetDrain("hz-a", true, time.Now())); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	d := c.drains["hz-a"]
	c.mu.Unlock()
	if !d.Drained || !d.Since.Equal(since.UTC().Round(0)) {
		t.Errorf("Expected the drain kept with its time %v, got %+v", since, d)
	}
	before := time.Now()
	if err := c.Apply("test", runstate.SetDrain("hz-a", false, time.Time{})); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	d, ok := c.drains["hz-a"]
	c.mu.Unlock()
	if !ok || d.Drained || d.Since.Before(before) {
		t.Errorf("Expected hz-a ramping back since the undrain, got %+v (%v)", d, ok)
	}
	p, _ := json.Marshal(map[string]any{"name": "east", "drain": []string{"hz-b"}})
	if err := c.Apply("test", runstate.Change{Key: "plan/east", Value: p}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	n := len(c.plans.list)
	c.mu.Unlock()
	data, _ := os.ReadFile(state)
	if n != 1 || !strings.Contains(string(data), `"name":"east"`) {
		t.Errorf("Expected the plan kept, got %d plans and\n%s", n, data)
	}
	if drainedIn(c.view.Load(), "hz-b") {
		t.Errorf("Expected a stored plan to drain nothing")
	}
}
