package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// cmdLatency reads `dnsperf -v` output, where every answered query is a line
// "> RCODE NAME TYPE SECONDS" (a timed-out one has "T" as its RCODE), and
// prints "p50_ms p99_ms answered timeouts" (nearest-rank percentiles). With
// -late MS it then lists the clusters of queries slower than MS: dnsperf
// prints them as they are answered, so at a fixed -rate a line's place
// tells when it was answered.
func cmdLatency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	in := fs.String("in", "-", "dnsperf -v output (- for stdin; a .gz file is read through gzip)")
	late := fs.Float64("late", 0, "list the clusters of answers slower than this many ms (0: none)")
	rate := fs.Float64("rate", 20000, "with -late: the rate (qps) the queries were sent at")
	top := fs.Int("top", 10, "with -late: the clusters listed, the largest first")
	fs.Parse(args)
	if *late < 0 || *rate <= 0 || *top < 0 {
		return fmt.Errorf("latency: -rate must be positive, -late and -top not negative")
	}
	var r io.Reader = os.Stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
		if strings.HasSuffix(*in, ".gz") {
			z, err := gzip.NewReader(f)
			if err != nil {
				return fmt.Errorf("%s: %w", *in, err)
			}
			r = z
		}
	}
	var lat []float64
	timeouts := 0
	sc := bufio.NewScanner(r)
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
	inOrder := slices.Clone(lat)
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(lat)))) - 1
		return lat[max(0, min(i, len(lat)-1))] * 1000
	}
	fmt.Printf("%.3f %.3f %d %d\n", pct(50), pct(99), len(lat), timeouts)
	if *late > 0 {
		printClusters(os.Stdout, lateClusters(inOrder, *late/1000, clusterGap), *late, *rate, *top)
	}
	return nil
}

// clusterGap is how many answers in time may separate two slow ones of
// one cluster.
const clusterGap = 100

// cluster is a run of slow answers: from the first to the last, by place.
type cluster struct {
	first, last, slow int
	worst             float64 // seconds
}

// lateClusters groups the answers slower than limit (seconds), in the order
// they came, into clusters: a slow answer within gap places of the last one
// joins its cluster.
func lateClusters(lat []float64, limit float64, gap int) []cluster {
	var out []cluster
	for i, v := range lat {
		if v <= limit {
			continue
		}
		if n := len(out); n > 0 && i-out[n-1].last <= gap {
			c := &out[n-1]
			c.last, c.slow, c.worst = i, c.slow+1, max(c.worst, v)
			continue
		}
		out = append(out, cluster{first: i, last: i, slow: 1, worst: v})
	}
	return out
}

func printClusters(w io.Writer, cs []cluster, lateMs, rate float64, top int) {
	slow := 0
	for _, c := range cs {
		slow += c.slow
	}
	fmt.Fprintf(w, "%d answers over %g ms in %d clusters\n", slow, lateMs, len(cs))
	slices.SortStableFunc(cs, func(a, b cluster) int { return b.slow - a.slow })
	for _, c := range cs[:min(top, len(cs))] {
		fmt.Fprintf(w, "  at %7.3f s: %5d slow over %6.1f ms, the slowest %.2f ms\n",
			float64(c.first)/rate, c.slow, float64(c.last-c.first)/rate*1000, c.worst*1000)
	}
}
