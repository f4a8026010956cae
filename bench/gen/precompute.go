package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// cmdPrecompute measures what the precomputation costs: the time and
// memory of the table of the databases' IPv4 networks, and of preparing
// the decisions of their locations for a node table of 93×scale nodes
// and the given number of records.
func cmdPrecompute(args []string) error {
	fs := flag.NewFlagSet("precompute", flag.ExitOnError)
	city := fs.String("city", "", "City mmdb (with -asn); empty: the synthetic Chinese databases of scopes")
	asn := fs.String("asn", "", "ASN mmdb")
	ipdbPath := fs.String("ipdb", "", "IPIP.net ipdb laid over the MaxMind databases (with -city)")
	scale := fs.Int("scale", 1, "node table: 93 nodes times this")
	records := fs.Int("records", 1, "records, each served by every node")
	budget := fs.Int64("budget", locate.DefaultPrecomputeBytes, "the precompute SIZE in bytes")
	fs.Parse(args)
	if *city == "" {
		dir, err := os.MkdirTemp("", "gslb-precompute")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*city, *asn = filepath.Join(dir, "c.mmdb"), filepath.Join(dir, "a.mmdb")
		if _, err := synthChina(*city, *asn, 1, 1); err != nil {
			return err
		}
	}
	files := geo.Files{"city": {*city}, "asn": {*asn}}
	if *ipdbPath != "" {
		files["ipdb"] = []string{*ipdbPath}
	}
	db, err := geo.OpenFiles(files)
	if err != nil {
		return err
	}
	tb, err := scaledTable(*scale, *records)
	if err != nil {
		return err
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	h0 := heap()
	debug.FreeOSMemory()
	r0 := rss()
	l, err := locate.New(locate.Config{DB: db, Carriers: tb.Carriers, CacheSize: 1000, Precompute: &locate.PrecomputeConfig{MaxBytes: *budget, MaxTime: time.Hour}})
	if err != nil {
		return err
	}
	began := time.Now()
	l.Start()
	defer l.Close()
	for !l.Tabled() {
		if time.Since(began) > time.Hour {
			return fmt.Errorf("no table after an hour")
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(began)
	h1 := heap()
	debug.FreeOSMemory()
	r1 := rss()
	fmt.Printf("locations: %s, %.0f ranges, %.1f MB (table's own count), heap +%.1f MB, RSS +%.1f MB, walked up to %v (invalid IP: all)\n",
		took.Round(time.Millisecond), testutil.ToFloat64(locate.PrecomputedRanges),
		testutil.ToFloat64(locate.PrecomputedBytes)/1e6, float64(int64(h1)-int64(h0))/1e6, float64(r1-r0)/1e6, l.PrecomputedUpTo())
	began = time.Now()
	places := l.Placed()
	took = time.Since(began)
	h1b := heap()
	fmt.Printf("placed: %d distinct clients in %s, heap +%.1f MB\n", places.Len(), took.Round(time.Millisecond), float64(int64(h1b)-int64(h1))/1e6)
	h1 = h1b

	cls := make([]scoring.Client, places.Len())
	for i := range cls {
		loc := places.At(i)
		cls[i] = policy.ClientOf(&loc)
	}
	p := scoring.DefaultParams
	cache := policy.NewCache()
	v, _ := policy.NewView(policy.Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: &p, Now: time.Now(), Cache: cache})
	// As the control plane's warm-up: the cache sized within its bound.
	began = time.Now()
	limit := cache.Reserve(len(cls)*v.PerClient(), policy.WarmBytes, v.DecisionBytes())
	until := began.Add(policy.WarmTime)
	n := v.Warm(cls, limit, nil, func() bool { return time.Now().Before(until) })
	took = time.Since(began)
	h2 := heap()
	fmt.Printf("decisions: %d nodes, %d records, %d clients: %d prepared (limit %d, %d slots, within %d MiB and %s) in %s, heap +%.1f MB (%.0f B each)\n",
		len(tb.Nodes), len(tb.Names), len(cls), n, limit, cache.Slots(), policy.WarmBytes>>20, policy.WarmTime,
		took.Round(time.Millisecond), float64(int64(h2)-int64(h1))/1e6, float64(int64(h2)-int64(h1))/float64(max(n, 1)))
	runtime.KeepAlive(v)
	return nil
}

// rss is the process's resident set in bytes, 0 where /proc has none.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	fmt.Sscan(string(b), &size, &res)
	return res * int64(os.Getpagesize())
}

// scaledTable is the 93-node table scale times over (each copy a little
// apart) with records records served by every node.
func scaledTable(scale, records int) (*table.Table, error) {
	var y bytes.Buffer
	y.WriteString("nodes:\n")
	k := 0
	for c := range scale {
		for _, n := range siteNodes(uint64(c + 1)) {
			k++
			fmt.Fprintf(&y, "  - {id: %s-%d, ipv4: [10.%d.%d.%d], country: CN, province: %s, isp: %s, lat: %.2f, lon: %.2f, cost: %.1f}\n",
				n.ID, c, k>>16&255, k>>8&255, k&255, n.Province, n.ISP, n.Lat+float64(c)*0.01, n.Lon, n.Cost)
		}
	}
	y.WriteString("records:\n")
	for i := range records {
		fmt.Fprintf(&y, "  - name: r%d.example.org\n", i)
	}
	return table.Parse("nodes.yaml", y.Bytes(), []string{"example.org."}, 60)
}
