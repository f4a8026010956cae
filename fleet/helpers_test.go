package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/internal/testredis"

	"github.com/redis/go-redis/v9"
)

func init() {
	clog.Discard()
	redis.SetLogger(quiet{})
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// testTimeout bounds each Redis call of a test member: the default, which
// a live loopback Redis never reaches on a loaded machine (a shorter one
// made members lose their leases there).
const testTimeout = DefaultTimeout

// slack is what a loaded machine may add to a bounded wait: what a
// dependency that hangs would cost is unbounded, so a bound plus slack
// still tells them apart.
const slack = time.Second

// member is one fleet member of a test with what its callbacks saw.
type member struct {
	*Fleet
	mu        sync.Mutex
	conflicts []Conflict
	rollbacks []Rollback
	states    int
}

func (m *member) Conflicts() []Conflict {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Conflict(nil), m.conflicts...)
}

func (m *member) Rollbacks() []Rollback {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Rollback(nil), m.rollbacks...)
}

// client is a member's own connection, as a separate process would have.
func client(t testing.TB, rs *testredis.Server) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{
		Addr: rs.Addr(), DialTimeout: testTimeout, ReadTimeout: testTimeout, WriteTimeout: testTimeout,
		PoolTimeout: testTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// start starts member id of fleet "test" seeing from vantage; edit may
// change its Config.
func start(t testing.TB, rs *testredis.Server, id string, vantage Vantage, edit func(*Config)) *member {
	t.Helper()
	m := &member{}
	cfg := Config{
		Name: "test", Member: id, Vantage: vantage,
		Timeout: testTimeout, ProbeInterval: 400 * time.Millisecond,
		OnConflict: func(c Conflict) { m.mu.Lock(); m.conflicts = append(m.conflicts, c); m.mu.Unlock() },
		OnRollback: func(r Rollback) { m.mu.Lock(); m.rollbacks = append(m.rollbacks, r); m.mu.Unlock() },
		OnState:    func(*State) { m.mu.Lock(); m.states++; m.mu.Unlock() },
	}
	if rs != nil { // else edit sets the client
		cfg.Client = client(t, rs)
	}
	if edit != nil {
		edit(&cfg)
	}
	f, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start %s: %v", id, err)
	}
	m.Fleet = f
	t.Cleanup(func() { f.Close() })
	return m
}

var (
	telecom = Vantage{Carrier: "telecom", Province: "ZJ"}
	unicom  = Vantage{Carrier: "unicom"}
)

func drain(node string) Change {
	return Change{Key: "drain/" + node, Value: json.RawMessage(`{"since":"2026-12-01T00:00:00Z"}`)}
}

func undrain(node string) Change { return Change{Key: "drain/" + node} }

// has says whether m's state has key (with value v, unless v is "").
func has(m *member, key, v string) (bool, string) {
	e, ok := m.State().Get(key)
	if !ok {
		return false, fmt.Sprintf("%s: no %s in %v", m.cfg.Member, key, m.State().Keys(""))
	}
	if v != "" && string(e.Value) != v {
		return false, fmt.Sprintf("%s: %s is %s", m.cfg.Member, key, e.Value)
	}
	return true, ""
}

func lacks(m *member, key string) (bool, string) {
	if _, ok := m.State().Get(key); ok {
		return false, fmt.Sprintf("%s still has %s", m.cfg.Member, key)
	}
	return true, ""
}

// all holds when cond holds for every member.
func all(ms []*member, cond func(*member) (bool, string)) func() (bool, string) {
	return func() (bool, string) {
		for _, m := range ms {
			if ok, last := cond(m); !ok {
				return false, last
			}
		}
		return true, ""
	}
}

// poll reports whether cond holds within limit, polling every 20ms.
func poll(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
