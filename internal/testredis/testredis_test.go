package testredis

import (
	"testing"
	"time"
)

func TestStartRestartPause(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr(), "", nil); err != nil {
		t.Fatalf("Ping after Start: %v", err)
	}
	s.Pause()
	if err := ping(s.Addr(), "", nil); err == nil {
		t.Fatalf("Ping answered while paused")
	}
	s.Resume()
	if err := ping(s.Addr(), "", nil); err != nil {
		t.Fatalf("Ping after Resume: %v", err)
	}
	addr := s.Addr()
	s.Stop()
	if err := ping(addr, "", nil); err == nil {
		t.Fatalf("Ping answered after Stop")
	}
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Restart moved from %s to %s", addr, s.Addr())
	}
	deadline := time.Now().Add(startWait)
	for ping(s.Addr(), "", nil) != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := ping(s.Addr(), "", nil); err != nil {
		t.Fatalf("Ping after Restart: %v", err)
	}
}

func TestStartAuth(t *testing.T) {
	s := StartAuth(t, "s3cret-pass")
	if err := ping(s.Addr(), "s3cret-pass", nil); err != nil {
		t.Fatalf("PING with the password: %v", err)
	}
	if err := ping(s.Addr(), "", nil); err == nil {
		t.Fatal("Expected PING without the password to fail")
	}
}

func TestClusterFailover(t *testing.T) {
	c := StartCluster(t, 3, 1)
	slot := c.Slot("{fleet}")
	old := c.MasterOf(slot)
	if old == nil {
		t.Fatalf("No master serves slot %d", slot)
	}
	killed, promoted := c.Failover(slot, 30*time.Second)
	if m := c.MasterOf(slot); m == nil || m == old {
		t.Fatalf("Slot %d still on %v after the failover", slot, m)
	}
	t.Logf("Failover took %v", promoted.Sub(killed))
}

func TestSentinelFailover(t *testing.T) {
	s := StartSentinel(t, 1, 3)
	old := s.CurrentMaster()
	if old != s.Master.Addr() {
		t.Fatalf("The sentinels name %q, want %s", old, s.Master.Addr())
	}
	killed, promoted := s.Failover(60 * time.Second)
	if m := s.CurrentMaster(); m != s.Replicas[0].Addr() {
		t.Fatalf("The sentinels name %q after the failover, want %s", m, s.Replicas[0].Addr())
	}
	t.Logf("Failover took %v", promoted.Sub(killed))
}

func TestProxyCut(t *testing.T) {
	s := Start(t)
	p := NewProxy(t, s.Addr())
	if err := ping(p.Addr(), "", nil); err != nil {
		t.Fatalf("Ping through the proxy: %v", err)
	}
	p.Cut()
	if err := ping(p.Addr(), "", nil); err == nil {
		t.Fatal("Ping answered through a cut proxy")
	}
	p.Restore()
	if err := ping(p.Addr(), "", nil); err != nil {
		t.Fatalf("Ping after Restore: %v", err)
	}
}

func TestStartTLS(t *testing.T) {
	s := StartTLS(t)
	if err := ping(s.Addr(), "", s.tls); err != nil {
		t.Fatalf("PING over TLS: %v", err)
	}
	if err := ping(s.Addr(), "", nil); err == nil {
		t.Fatal("Expected plain PING to fail")
	}
}
