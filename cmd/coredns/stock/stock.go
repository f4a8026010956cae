// Package stock links the lean set of stock CoreDNS plugins that our build
// ships beside gslb and puts gslb in the directive order, right before
// cache. The others take their place in CoreDNS's own order
// (dnsserver.Directives). The gslb tool links it to validate a Corefile
// the way the server does.
package stock

import (
	_ "github.com/coredns/coredns/core" // the dns server type
	"github.com/coredns/coredns/core/dnsserver"

	// The stock plugins an operator runs beside gslb.
	_ "github.com/coredns/coredns/plugin/acl"
	_ "github.com/coredns/coredns/plugin/any"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/chaos"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/dnssec"
	_ "github.com/coredns/coredns/plugin/dnstap"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/multisocket"
	_ "github.com/coredns/coredns/plugin/nsid"
	_ "github.com/coredns/coredns/plugin/pprof"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/root"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/tls"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func init() {
	for i, d := range dnsserver.Directives {
		if d == "gslb" {
			return
		}
		if d == "cache" {
			dnsserver.Directives = append(dnsserver.Directives[:i], append([]string{"gslb"}, dnsserver.Directives[i:]...)...)
			return
		}
	}
	panic("gslb: no cache directive to insert before")
}
