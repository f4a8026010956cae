// Command coredns is CoreDNS v1.15.0 with the gslb plugin and a lean set of
// stock plugins.
package main

import (
	"flag"
	"fmt"

	"github.com/coredns/coredns/coremain"

	_ "github.com/gslbdns/gslb/cmd/coredns/plugins"
	"github.com/gslbdns/gslb/internal/buildinfo"
)

func main() {
	// coremain parses the same flags again; -version prints CoreDNS's
	// lines there and exits, after the plugin's.
	flag.Parse()
	if f := flag.Lookup("version"); f != nil && f.Value.String() == "true" {
		fmt.Println(buildinfo.Read())
	}
	coremain.Run()
}
