package carrierlist_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/geo/carrierlist"
)

// bigLists writes lists the size of china-operator-ip's: 8 lists of 2,500
// IPv4 /20s and 500 IPv6 /32s each.
func bigLists(b *testing.B) string {
	dir := b.TempDir()
	for l, name := range []string{"chinanet", "unicom", "cmcc", "crtc", "cernet", "cstnet", "drpeng", "googlecn"} {
		var sb strings.Builder
		for i := range 2500 {
			n := l*2500 + i
			fmt.Fprintf(&sb, "%d.%d.%d.0/20\n", 1+n>>12, n>>4&0xff, n&0xf<<4)
		}
		for i := range 500 {
			fmt.Fprintf(&sb, "2400:%x::/32\n", l*500+i)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func BenchmarkLoad(b *testing.B) {
	dir := bigLists(b)
	for b.Loop() {
		if _, err := carrierlist.Load([]string{dir}, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	s, err := carrierlist.Load([]string{bigLists(b)}, 0)
	if err != nil {
		b.Fatal(err)
	}
	a := netip.MustParseAddr("3.77.5.9")
	for b.Loop() {
		s.Lookup(a)
	}
}
