package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeTimeout is the clusters' cluster-node-timeout: a master is failed
// over about this long after it stops answering.
const NodeTimeout = time.Second

// Cluster is a Redis Cluster on loopback: masters with a replica each.
type Cluster struct {
	t     testing.TB
	Nodes []*Server // masters first, as created; roles change on failover
}

// StartCluster starts masters*(1+replicas) cluster-enabled servers, joins
// them with redis-cli, and waits until the cluster serves every slot and
// every replica is in sync. Everything is killed when the test ends.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for range masters * (1 + replicas) {
		c.Nodes = append(c.Nodes, startWith(t, "", "", func(int) []string {
			bus, err := freePort()
			if err != nil {
				t.Fatalf("Cannot find a free port: %v", err)
			}
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds())),
				"--cluster-port", strconv.Itoa(bus),
				"--cluster-replica-validity-factor", "0",
			}
		}))
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found (it comes with redis-server's packages): %v", err)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitHealthy(startWait, masters)
	return c
}

// Addrs are the nodes' addresses, the seeds a client is given.
func (c *Cluster) Addrs() []string { return addrs(c.Nodes) }

func addrs(ss []*Server) []string {
	var a []string
	for _, s := range ss {
		a = append(a, s.Addr())
	}
	return a
}

// Slot is key's hash slot, as the cluster computes it.
func (c *Cluster) Slot(key string) int {
	c.t.Helper()
	n, err := c.do(func(ctx context.Context, r *redis.Client) (any, error) { return r.ClusterKeySlot(ctx, key).Result() })
	if err != nil {
		c.t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	return int(n.(int64))
}

// MasterOf returns the live master serving slot, nil when none does.
func (c *Cluster) MasterOf(slot int) *Server {
	c.t.Helper()
	for _, n := range c.nodes() {
		if !n.master || n.failed {
			continue
		}
		for _, r := range n.slots {
			if slot >= r[0] && slot <= r[1] {
				return c.byAddr(n.addr)
			}
		}
	}
	return nil
}

// Failover kills the master serving slot and returns when it was killed
// and when a replica serves the slot instead, as the other nodes see it.
func (c *Cluster) Failover(slot int, limit time.Duration) (killed, promoted time.Time) {
	c.t.Helper()
	old := c.MasterOf(slot)
	if old == nil {
		c.t.Fatalf("No master serves slot %d", slot)
	}
	old.Stop()
	killed = time.Now()
	for deadline := killed.Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := c.MasterOf(slot); m != nil && m != old && c.allAgree(slot, m) {
			return killed, time.Now()
		}
	}
	c.t.Fatalf("No replica took over slot %d within %v of killing %s", slot, limit, old.Addr())
	return
}

// allAgree reports whether every live node sees m as slot's master.
func (c *Cluster) allAgree(slot int, m *Server) bool {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		ns, err := clusterNodes(s.Addr())
		if err != nil {
			return false
		}
		ok := false
		for _, n := range ns {
			for _, r := range n.slots {
				if n.master && !n.failed && slot >= r[0] && slot <= r[1] && n.addr == m.Addr() {
					ok = true
				}
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (c *Cluster) byAddr(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// waitHealthy waits until every live node reports cluster_state:ok and
// masters masters with a replica in sync each.
func (c *Cluster) waitHealthy(limit time.Duration, masters int) {
	c.t.Helper()
	var last string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = ""
		for _, s := range c.Nodes {
			info, err := command(s.Addr(), func(ctx context.Context, r *redis.Client) (any, error) { return r.ClusterInfo(ctx).Result() })
			if err != nil || !strings.Contains(info.(string), "cluster_state:ok") {
				last = fmt.Sprintf("%s: %v %v", s.Addr(), info, err)
			}
		}
		ns, err := clusterNodes(c.Nodes[0].Addr())
		if last == "" && err == nil && syncedReplicas(ns) >= len(c.Nodes)-masters {
			return
		}
		last += fmt.Sprintf(" nodes: %+v %v", ns, err)
	}
	c.t.Fatalf("The cluster did not become healthy within %v: %s", limit, last)
}

func syncedReplicas(ns []clusterNode) int {
	n := 0
	for _, x := range ns {
		if !x.master && !x.failed && x.linked {
			n++
		}
	}
	return n
}

// do runs fn against the first live node.
func (c *Cluster) do(fn func(context.Context, *redis.Client) (any, error)) (any, error) {
	var err error
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		var v any
		if v, err = command(s.Addr(), fn); err == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no live node answered: %v", err)
}

func (c *Cluster) nodes() []clusterNode {
	ns, err := c.do(func(ctx context.Context, r *redis.Client) (any, error) { return r.ClusterNodes(ctx).Result() })
	if err != nil {
		return nil
	}
	return parseNodes(ns.(string))
}

// command runs fn with a one-off client of addr, bounded by a second.
func command(addr string, fn func(context.Context, *redis.Client) (any, error)) (any, error) {
	r := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, DisableIdentity: true})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return fn(ctx, r)
}

type clusterNode struct {
	addr           string
	master, failed bool
	linked         bool // a replica whose link to its master is up
	slots          [][2]int
}

func clusterNodes(addr string) ([]clusterNode, error) {
	v, err := command(addr, func(ctx context.Context, r *redis.Client) (any, error) { return r.ClusterNodes(ctx).Result() })
	if err != nil {
		return nil, err
	}
	return parseNodes(v.(string)), nil
}

// parseNodes reads CLUSTER NODES: id addr@bus flags master ping pong epoch
// link slots...
func parseNodes(s string) []clusterNode {
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := "," + f[2] + ","
		n := clusterNode{
			addr:   addr,
			master: strings.Contains(flags, ",master,"),
			failed: strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,"),
			linked: f[7] == "connected",
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		out = append(out, n)
	}
	return out
}
