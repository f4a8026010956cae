package testsupport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// ListenLow listens on a loopback TCP port below the kernel's ephemeral
// range (32768 on): a port the kernel picks for port 0 comes from that
// range, where a client connection can take it between a test's pick and
// its server's bind.
func ListenLow(tb testing.TB) net.Listener {
	tb.Helper()
	for range 1000 {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(22000))); err == nil {
			return l
		}
	}
	tb.Fatal("No free loopback port below 32000")
	return nil
}

// FreeAddr is a loopback TCP address free just now (ListenLow's), for a
// server the test starts.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l := ListenLow(tb)
	defer l.Close()
	return l.Addr().String()
}
