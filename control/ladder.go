package control

import (
	"strings"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/scoring"
)

// warnLadders says loudly which tiers a ladder leaves out: the clients
// whose nodes are only there fail open, to the least loaded node anywhere.
func warnLadders(o *config.Options) {
	for _, l := range []struct {
		opt string
		l   *scoring.Ladder
	}{{"ladder", o.Params.Ladder}, {"ladder6", o.Params.Ladder6}} {
		if l.l == nil {
			continue
		}
		if miss := l.l.Missing(); len(miss) > 0 {
			log.Warningf("%s (%s:%d) leaves out %s: a client whose nodes are only on those tiers gets the least loaded node of the record, wherever it is",
				l.opt, o.File, o.Lines[l.opt], strings.Join(miss, ", "))
		}
	}
}
