package control

import (
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
)

// TestStartReleasesLoadMemory: an instance hands the memory its load
// freed back to the OS once, when it starts serving.
func TestStartReleasesLoadMemory(t *testing.T) {
	n := 0
	saved := releaseMemory
	releaseMemory = func() { n++ }
	t.Cleanup(func() { releaseMemory = saved })
	dir := testsupport.Fixture(t, testsupport.FixtureNodes)
	c := newTestControl(t, dir, "gslb example.org {\ngeoip city.mmdb\nnodes nodes.yaml\n}")
	if n != 0 {
		t.Fatalf("Expected no release while loading, got %d", n)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Expected one release once started, got %d", n)
	}
}
