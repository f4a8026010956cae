// Package plugins links the server's plugins: gslb and the stock set, with
// gslb right before cache in the directive order.
package plugins

import (
	_ "github.com/gslbdns/gslb"                   // the plugin
	_ "github.com/gslbdns/gslb/cmd/coredns/stock" // the stock plugins and the order
)
