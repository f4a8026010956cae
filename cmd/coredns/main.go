// Command coredns is CoreDNS v1.15.0 with the gslb plugin and a lean set of
// stock plugins.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/gslbdns/gslb/cmd/coredns/plugins"
)

func main() {
	coremain.Run()
}
