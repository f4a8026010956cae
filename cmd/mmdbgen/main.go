// Command mmdbgen builds MaxMind-format City and ASN databases from a CSV
// (see geo/mmdbgen.ReadCSV), e.g. the demo databases:
//
//	go run ./cmd/mmdbgen -in demo/demo.csv -city demo/gslb-demo-City.mmdb -asn demo/gslb-demo-ASN.mmdb
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gslbdns/gslb/geo/mmdbgen"
)

func main() {
	in := flag.String("in", "demo/demo.csv", "input CSV: network,country,province,city,lat,lon,radius,asn,org")
	city := flag.String("city", "demo/gslb-demo-City.mmdb", "City database to write (\"\" to skip)")
	asn := flag.String("asn", "demo/gslb-demo-ASN.mmdb", "ASN database to write (\"\" to skip)")
	flag.Parse()
	if err := run(*in, *city, *asn); err != nil {
		fmt.Fprintln(os.Stderr, "mmdbgen:", err)
		os.Exit(1)
	}
}

func run(in, cityPath, asnPath string) error {
	cities, asns, err := mmdbgen.ReadCSV(in)
	if err != nil {
		return err
	}
	if cityPath != "" {
		if err := mmdbgen.WriteCity(cityPath, cities); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %d networks\n", cityPath, len(cities))
	}
	if asnPath != "" {
		if err := mmdbgen.WriteASN(asnPath, asns); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %d networks\n", asnPath, len(asns))
	}
	return nil
}
