// Package gslb is a CoreDNS plugin that answers A/AAAA for its records with
// the node that best fits the client's location and carrier, among the nodes
// that are healthy and not overloaded.
package gslb

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/sign"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

var log = clog.NewWithPlugin(pluginName)

// GSLB is the plugin handler.
type GSLB struct {
	Next  plugin.Handler
	Zones []string
	Fall  fall.F

	opts    *config.Options
	ctl     *control.Control
	decider *decide.Decider
	metrics metricsCache

	// The next plugin's apex SOA by zone, when it is authoritative for
	// the zone we fall through to; see followNext.
	nextSOA atomic.Pointer[map[string]*dns.SOA]
	soaOnce sync.Once
	soaWire atomic.Pointer[soaWire] // the last negative answer's SOA, packed

	// signers sign each zone's answers to queries with the DO bit; nil
	// without the dnssec option. Set at setup, read-only after.
	signers map[string]*sign.Signer
	// denial is how signed answers deny, its default resolved; chains
	// are the NSEC or NSEC3 chains of the latest node table.
	denial sign.Denial
	chains atomic.Pointer[chainSet]

	rrl *rrl.Limiter // nil: rrl off

	warned map[string]bool // warnUnreachable's, under the control plane's lock
}

// Name implements plugin.Handler.
func (g *GSLB) Name() string { return pluginName }

func (g *GSLB) start() error {
	if err := g.ctl.Start(); err != nil {
		return err
	}
	for _, z := range g.Zones {
		if s := g.signers[dns.CanonicalName(z)]; s != nil {
			log.Info(s.Describe())
		}
	}
	g.soaOnce.Do(func() { g.followNext(g.ctl.Stopping(), g.opts.Reload) })
	return nil
}
func (g *GSLB) stop() error { return g.ctl.Stop() }

// ServeDNS implements plugin.Handler.
func (g *GSLB) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	q := inflights.Get().(*inflight)
	rc, err := g.route(ctx, w, r, q)
	switch q.decide {
	case decideAddress:
		rc, err = g.serveAddress(ctx, q)
	case decideHTTPS:
		rc, err = g.serveHTTPS(ctx, q)
	}
	q.a.flush()
	if q.own && !plugin.ClientWrite(rc) {
		if g.rrl != nil && g.limitedError(ctx, w, r) {
			rc = dns.RcodeSuccess // nothing written: dropped, or slipped
		} else {
			q.mx.reply(q.zone, rc) // the server writes it
		}
	}
	// Not cleared: route and the decision set every field a query reads,
	// and clearing would pay the write barrier on every pointer. What it
	// still points to is kept only until the pool drops it at a GC.
	q.decide = decideNone
	inflights.Put(q)
	return rc, err
}

// inflight is one query: its question, answer and decision. Pooled: on
// the stack, they would make the query's goroutine grow its stack (by
// copying it) once more on the way down to the decision.
type inflight struct {
	a     answer
	asked string // the question's name as the wire gave it
	rec   *table.Record
	mx    *serverMetrics
	zone  string // the zone of an owned question
	// decide: what route left to decide on the short stack.
	decide uint8
	own    bool // the reply is gslb's, not the next plugin's
	q      decide.Query
	out    decide.Outcome
	out6   decide.Outcome // an HTTPS query's AAAA decision
}

// What route leaves to decide.
const (
	decideNone    = iota
	decideAddress // A or AAAA: serveAddress
	decideHTTPS   // HTTPS for a record with HTTPS params: serveHTTPS
)

var inflights = sync.Pool{New: func() any { return new(inflight) }}

// route answers what is not an A, AAAA or HTTPS question for a record;
// for one, it fills q and sets q.decide, to decide on a short stack.
//
//go:noinline
func (g *GSLB) route(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, q *inflight) (int, error) {
	// The server drops queries without a question. The name is used as the
	// wire gave it, already in presentation form: the answer echoes its case.
	asked := r.Question[0].Name
	qname := strings.ToLower(asked)
	zone := zoneOf(g.Zones, qname)
	q.own = zone != ""
	if zone == "" {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	mx := g.metrics.of(metrics.WithServer(ctx))
	q.mx, q.zone = mx, zone
	if r.Opcode != dns.OpcodeQuery {
		// NOTIFY, UPDATE and the rest: the answers are computed, not stored.
		return dns.RcodeNotImplemented, nil
	}
	v := g.ctl.View()
	rec := v.Table.Records[qname]
	beacon := false
	if rec == nil && g.opts.Resolvers != nil && g.opts.Resolvers.Beacon != "" {
		rec, beacon = g.beacon(v, qname, w)
	}
	if rec == nil && g.Fall.Through(qname) {
		q.own = false
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	qtype := r.Question[0].Qtype
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		return dns.RcodeRefused, nil
	}
	ecs, err := parseECS(r)
	if err != nil {
		mx.invalid.Inc()
		log.Debugf("FORMERR for %s from %s: %v", qname, decide.RemoteAddr(w.RemoteAddr()), err)
		return dns.RcodeFormatError, nil
	}
	// Field by field, as below: q is on the heap, where a whole-struct
	// write pays the garbage collector's bulk write barrier.
	a := &q.a
	a.g, a.w, a.r, a.v, a.zone, a.ecs, a.signer, a.server = g, w, r, v, zone, ecs, nil, ""
	a.qname, a.mx, a.chain = qname, mx, nil
	if g.signers != nil {
		a.chain = g.chainFor(v.Table, zone)
		if o := r.IsEdns0(); o != nil && o.Do() {
			a.signer, a.server = g.signers[zone], metrics.WithServer(ctx)
		}
	}
	q.decide = decideAddress
	switch {
	case qtype == dns.TypeHTTPS && rec != nil && rec.HTTPS != nil:
		q.decide = decideHTTPS
	case rec == nil || qtype != dns.TypeA && qtype != dns.TypeAAAA:
		q.decide = decideNone
		return a.nonAddress(qname, rec != nil, qtype)
	}
	q.asked, q.rec = asked, rec
	dq := &q.q
	dq.View, dq.Record, dq.QType, dq.Remote, dq.ECS, dq.Beacon = v, rec, qtype, w.RemoteAddr(), ecs, beacon
	return 0, nil
}

// serveAddress decides q, an A or AAAA query for a record, and answers it.
func (g *GSLB) serveAddress(ctx context.Context, q *inflight) (int, error) {
	a, out, mx := &q.a, &q.out, q.mx
	start := sinceEpoch()
	g.decider.Decide(ctx, &q.q, out)
	mx.duration.Observe((sinceEpoch() - start).Seconds())
	setMetadata(ctx, out)
	mx.count(out, start)
	g.ctl.NoteDecision(out, epoch.Add(start))
	switch {
	case out.Decision.Winner == nil:
		// No node of the record has an address of this family.
		return a.negative(dns.RcodeSuccess, out.Scope)
	case out.Servfail:
		return dns.RcodeServerFailure, nil
	case out.Decision.Winner.CNAME != "" || out.Decision.Tier == scoring.TierFallback:
		return a.cname(q.asked, out.CNAME(), out)
	}
	return a.addresses(q.asked, out)
}

// zoneOf is plugin.Zones.Matches without its allocations: the longest zone
// qname is in. Both are lower case and fully qualified.
func zoneOf(zones []string, qname string) string {
	z := ""
	for _, zone := range zones {
		if len(zone) > len(z) && inZone(qname, zone) {
			z = zone
		}
	}
	return z
}

func inZone(name, zone string) bool {
	if zone == "." {
		return true
	}
	if !strings.HasSuffix(name, zone) {
		return false
	}
	rest := name[:len(name)-len(zone)]
	if rest == "" {
		return true
	}
	if rest[len(rest)-1] != '.' {
		return false
	}
	// An odd run of backslashes escapes the dot: it is not a label boundary.
	n := 0
	for i := len(rest) - 2; i >= 0 && rest[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// serveHTTPS answers an HTTPS query with the decisions an A and an AAAA
// query would get, built by decide.HTTPS. The A decision is the one counted and logged (the
// AAAA one when the A decision has no node), as the tools count it.
func (g *GSLB) serveHTTPS(ctx context.Context, q *inflight) (int, error) {
	a, rec, out4, out6 := &q.a, q.rec, &q.out, &q.out6
	start := sinceEpoch()
	g.decider.DecideHTTPS(ctx, &q.q, out4, out6)
	q.mx.duration.Observe((sinceEpoch() - start).Seconds())
	counted := decide.Counted(out4, out6)
	setMetadata(ctx, counted)
	q.mx.count(counted, start)
	g.ctl.NoteDecision(counted, epoch.Add(start))
	if out4.Servfail || out6.Servfail {
		return dns.RcodeServerFailure, nil
	}
	rr := decide.HTTPS(q.asked, rec, out4, out6) // nil when neither has a node
	if rr == nil {
		return a.negative(dns.RcodeSuccess, max(out4.Scope, out6.Scope))
	}
	return a.write(max(out4.Scope, out6.Scope), rr)
}
