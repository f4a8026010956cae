package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// cmdLatency reads `dnsperf -v` output, where every answered query is a line
// "> RCODE NAME TYPE SECONDS" (a timed-out one has "T" as its RCODE), and
// prints "p50_ms p99_ms answered timeouts" (nearest-rank percentiles).
func cmdLatency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	in := fs.String("in", "-", "dnsperf -v output (- for stdin)")
	fs.Parse(args)
	f := os.Stdin
	if *in != "-" {
		var err error
		if f, err = os.Open(*in); err != nil {
			return err
		}
		defer f.Close()
	}
	var lat []float64
	timeouts := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "> ") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue
		}
		if fields[1] == "T" || fields[1] == "I" {
			timeouts++
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		lat = append(lat, v)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(lat) == 0 {
		return fmt.Errorf("no latency lines (`> RCODE ... SECONDS`) in the input")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(lat)))) - 1
		return lat[max(0, min(i, len(lat)-1))] * 1000
	}
	fmt.Printf("%.3f %.3f %d %d\n", pct(50), pct(99), len(lat), timeouts)
	return nil
}
