package gslb

import (
	"context"
	"net"

	"github.com/coredns/coredns/plugin/metrics"

	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/splitmix"
	"github.com/gslbdns/gslb/rrl"

	"github.com/miekg/dns"
)

// limited applies the response rate limit to the reply of kind about to
// be written (rcode tells an NXDOMAIN's account, the zone's, from a
// NODATA's, the name's): true when it is not to be written, dropped or
// slipped here. An answer whose scope is not 0 differs per client subnet:
// its account is the ECS subnet's too, so a resolver asking one name for
// many subnets is not one flood.
func (a *answer) limited(kind rrl.Kind, rcode int, scope uint8) bool {
	l := a.g.rrl
	if l == nil {
		return false
	}
	ua, ok := a.w.RemoteAddr().(*net.UDPAddr)
	if !ok {
		return false // TCP: the client's address is real
	}
	var key uint64
	if kind == rrl.Denial && rcode == dns.RcodeNameError {
		key = l.Hash(a.zone)
	} else {
		key = l.Hash(a.qname) + uint64(a.r.Question[0].Qtype)<<48
		if scope > 0 && a.ecs != nil {
			key ^= splitmix.Mix(rrl.Prefix(a.ecs.Address, min(a.ecs.SourceNetmask, 32), min(a.ecs.SourceNetmask, 64)))
		}
	}
	act := l.Check(ua.IP, kind, key)
	if act == rrl.Pass {
		return false
	}
	a.g.limitedReply(a.mx.server, a.w, a.r, ua.IP, kind, act)
	return act != rrl.Log
}

// limitedError is limited for an error gslb returns for the server to
// write: true when the server is to write nothing.
func (g *GSLB) limitedError(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) bool {
	ua, ok := w.RemoteAddr().(*net.UDPAddr)
	if !ok {
		return false
	}
	act := g.rrl.Check(ua.IP, rrl.Error, 0)
	if act == rrl.Pass {
		return false
	}
	g.limitedReply(metrics.WithServer(ctx), w, r, ua.IP, rrl.Error, act)
	return act != rrl.Log
}

// limitedReply counts a limited reply, logs the first of a minute, and
// sends the truncated reply of a slip: the question alone, with TC, so
// that a real client asks again over TCP.
func (g *GSLB) limitedReply(server string, w dns.ResponseWriter, r *dns.Msg, ip net.IP, kind rrl.Kind, act rrl.Action) {
	rrlLimited.WithLabelValues(server, kind.String(), act.String()).Inc()
	if ok, dropped := rrlLog.Allow(rrlLogEvery); ok {
		log.Infof("Response rate limit: %s for %ss to %s (%s); coredns_gslb_rrl_limited_total counts each, this line comes at most once a minute%s", act, kind, ip, server, ratelog.Note(dropped))
	}
	if act != rrl.Slip {
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.Truncated = true
	if o := r.IsEdns0(); o != nil {
		m.SetEdns0(o.UDPSize(), o.Do())
	}
	w.WriteMsg(m)
}

// rrlLog bounds the log lines of limited replies.
var rrlLog ratelog.Limit
