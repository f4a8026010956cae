package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of StartSentinel watch.
const SentinelMaster = "gslbtest"

// Sentinel is a master, its replicas and the sentinels watching them, all
// on loopback.
type Sentinel struct {
	t         testing.TB
	Master    *Server
	Replicas  []*Server
	Sentinels []*Server
}

// StartSentinel starts a master with replicas, and sentinels (quorum: a
// majority of them) that fail it over NodeTimeout after it stops answering.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	s := &Sentinel{t: t, Master: Start(t)}
	for range replicas {
		s.Replicas = append(s.Replicas, startWith(t, "", "", func(int) []string {
			return []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Master.port)}
		}))
	}
	for range sentinels {
		// A sentinel rewrites its config file: each has its own.
		conf := filepath.Join(t.TempDir(), "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\n",
			SentinelMaster, s.Master.port, sentinels/2+1, SentinelMaster, NodeTimeout.Milliseconds(), SentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		sv := startWith(t, "", conf, func(int) []string { return []string{"--sentinel"} })
		s.Sentinels = append(s.Sentinels, sv)
	}
	s.waitReplicas(startWait, replicas)
	return s
}

// Addrs are the sentinels' addresses.
func (s *Sentinel) Addrs() []string { return addrs(s.Sentinels) }

// CurrentMaster is the master's address as the first live sentinel knows it.
func (s *Sentinel) CurrentMaster() string {
	for _, sv := range s.Sentinels {
		r := redis.NewSentinelClient(&redis.Options{Addr: sv.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		a, err := r.GetMasterAddrByName(ctx, SentinelMaster).Result()
		cancel()
		r.Close()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1])
		}
	}
	return ""
}

// Failover kills the master and returns when it was killed and when the
// sentinels named a replica instead.
func (s *Sentinel) Failover(limit time.Duration) (killed, promoted time.Time) {
	s.t.Helper()
	old := s.CurrentMaster()
	for _, n := range append([]*Server{s.Master}, s.Replicas...) {
		if n.Addr() == old {
			n.Stop()
		}
	}
	killed = time.Now()
	for deadline := killed.Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := s.CurrentMaster(); m != "" && m != old {
			return killed, time.Now()
		}
	}
	s.t.Fatalf("The sentinels named no new master within %v of killing %s", limit, old)
	return
}

// waitReplicas waits until the master has n replicas online and every
// sentinel knows them.
func (s *Sentinel) waitReplicas(limit time.Duration, n int) {
	s.t.Helper()
	var last any
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ok := true
		for _, sv := range s.Sentinels {
			r := redis.NewSentinelClient(&redis.Options{Addr: sv.Addr(), MaxRetries: -1, DialTimeout: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			reps, err := r.Replicas(ctx, SentinelMaster).Result()
			sents, err2 := r.Sentinels(ctx, SentinelMaster).Result()
			cancel()
			r.Close()
			if err != nil || len(reps) < n || err2 != nil || len(sents) < len(s.Sentinels)-1 {
				ok, last = false, fmt.Sprintf("%s: %d replicas %v, %d other sentinels %v", sv.Addr(), len(reps), err, len(sents), err2)
				break
			}
		}
		if ok {
			return
		}
	}
	s.t.Fatalf("The sentinels did not see the replicas within %v: %v", limit, last)
}
