package config

import (
	"strings"

	"github.com/coredns/coredns/core/dnsserver"
	corelog "github.com/coredns/coredns/plugin/log"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

var log = clog.NewWithPlugin(Name)

// WarnMetadata warns when the server block of cfg logs gslb labels
// without the metadata plugin: log then writes "-" for every one of them,
// and the decision log is empty without a word. cfg's handlers exist once
// its server is built: the server calls it at startup, gslb check after
// building the servers.
func WarnMetadata(cfg *dnsserver.Config) {
	if cfg.Handler("metadata") != nil {
		return
	}
	l, ok := cfg.Handler("log").(corelog.Logger)
	if !ok {
		return
	}
	for _, r := range l.Rules {
		if strings.Contains(r.Format, "{/"+Name+"/") {
			zone := strings.TrimSuffix(cfg.Zone, ".")
			if zone == "" {
				zone = "."
			}
			log.Warningf("the log of server block %s:%s writes {/%s/...} labels, but the block has no metadata plugin: every label is logged as \"-\"; add a line \"metadata\" to the block",
				zone, cfg.Port, Name)
			return
		}
	}
}
