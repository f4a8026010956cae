// Command ipdbgen builds an IPIP.net-format .ipdb database from a CSV (see
// geo/ipdbgen.ReadCSV), e.g.
//
//	go run ./cmd/ipdbgen -in networks.csv -out networks.ipdb
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gslbdns/gslb/geo/ipdbgen"
)

func main() {
	in := flag.String("in", "", "input CSV: network,FIELD,... (e.g. country_name,region_name,city_name,isp_domain)")
	out := flag.String("out", "", "database to write")
	build := flag.Int64("build", 0, "build time to record, unix seconds (0: now)")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ipdbgen -in FILE.csv -out FILE.ipdb [-build UNIXTIME]")
		os.Exit(2)
	}
	if *build == 0 {
		*build = time.Now().Unix()
	}
	if err := run(*in, *out, *build); err != nil {
		fmt.Fprintln(os.Stderr, err) // errors start with "ipdbgen:"
		os.Exit(1)
	}
}

func run(in, out string, build int64) error {
	m, recs, err := ipdbgen.ReadCSV(in)
	if err != nil {
		return err
	}
	m.Build = build
	if err := ipdbgen.Write(out, m, recs); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d networks, fields %v\n", out, len(recs), m.Fields)
	return nil
}
