// Command memload measures what loading an overrides file of N entries
// costs: the bytes allocated, the live heap and the process's RSS after
// the load. Run it under /usr/bin/time -v for the peak RSS:
//
//	go build -o /tmp/memload ./bench/memload && /usr/bin/time -f 'maxrss %M KB' /tmp/memload 100000
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/gslbdns/gslb/overrides"
)

func main() {
	n, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if err != nil || n < 1 || n > 1<<24 {
		fmt.Fprintln(os.Stderr, "usage: memload ENTRIES")
		os.Exit(2)
	}
	b := []byte("overrides:\n")
	for i := range n {
		b = fmt.Appendf(b, "  - cidr: %d.%d.%d.0/24\n    nodes: [sh-telecom]\n", 1+i>>16, (i>>8)&255, i&255)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t, err := overrides.Parse("generated", b, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("RSS after the load: %s\n", rss())
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("%d entries, file %.1f MB: %.0f MB allocated, %.1f MB live for the table\n",
		t.Len(), float64(len(b))/1e6, float64(after.TotalAlloc-before.TotalAlloc)/1e6, float64(after.HeapAlloc-before.HeapAlloc)/1e6)
}

func rss() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return "unknown"
}
