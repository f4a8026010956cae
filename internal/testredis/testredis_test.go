package testredis

import (
	"testing"
	"time"
)

func TestStartRestartPause(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr(), ""); err != nil {
		t.Fatalf("Ping after Start: %v", err)
	}
	s.Pause()
	if err := ping(s.Addr(), ""); err == nil {
		t.Fatalf("Ping answered while paused")
	}
	s.Resume()
	if err := ping(s.Addr(), ""); err != nil {
		t.Fatalf("Ping after Resume: %v", err)
	}
	addr := s.Addr()
	s.Stop()
	if err := ping(addr, ""); err == nil {
		t.Fatalf("Ping answered after Stop")
	}
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Restart moved from %s to %s", addr, s.Addr())
	}
	deadline := time.Now().Add(startWait)
	for ping(s.Addr(), "") != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := ping(s.Addr(), ""); err != nil {
		t.Fatalf("Ping after Restart: %v", err)
	}
}

func TestStartAuth(t *testing.T) {
	s := StartAuth(t, "s3cret-pass")
	if err := ping(s.Addr(), "s3cret-pass"); err != nil {
		t.Fatalf("PING with the password: %v", err)
	}
	if err := ping(s.Addr(), ""); err == nil {
		t.Fatal("Expected PING without the password to fail")
	}
}
