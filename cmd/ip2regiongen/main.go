// Command ip2regiongen builds ip2region xdb databases from a CSV (see
// geo/ip2regiongen.ReadCSV): one file per family, e.g.
//
//	go run ./cmd/ip2regiongen -in networks.csv -out4 v4.xdb -out6 v6.xdb
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

func main() {
	in := flag.String("in", "", "input CSV: network,country,province,city,isp,iso2")
	out4 := flag.String("out4", "", "IPv4 database to write (needs IPv4 rows)")
	out6 := flag.String("out6", "", "IPv6 database to write (needs IPv6 rows)")
	created := flag.Int64("created", 0, "creation time to record, unix seconds (0: now)")
	flag.Parse()
	if *in == "" || *out4 == "" && *out6 == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: ip2regiongen -in FILE.csv [-out4 FILE.xdb] [-out6 FILE.xdb] [-created UNIXTIME]")
		os.Exit(2)
	}
	if *created == 0 {
		*created = time.Now().Unix()
	}
	if err := run(*in, *out4, *out6, uint32(*created)); err != nil {
		fmt.Fprintln(os.Stderr, err) // errors start with "ip2regiongen:"
		os.Exit(1)
	}
}

func run(in, out4, out6 string, created uint32) error {
	v4, v6, err := ip2regiongen.ReadCSV(in)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		out     string
		version int
		recs    []ip2regiongen.Rec
	}{{out4, 4, v4}, {out6, 6, v6}} {
		if f.out == "" {
			if len(f.recs) > 0 {
				fmt.Fprintf(os.Stderr, "ip2regiongen: %d IPv%d rows skipped: no -out%d\n", len(f.recs), f.version, f.version)
			}
			continue
		}
		if len(f.recs) == 0 {
			return fmt.Errorf("ip2regiongen: %s has no IPv%d rows for %s", in, f.version, f.out)
		}
		if err := ip2regiongen.Write(f.out, ip2regiongen.Meta{IPVersion: f.version, Created: created}, f.recs); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %d IPv%d segments\n", f.out, len(f.recs), f.version)
	}
	return nil
}
