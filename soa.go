package gslb

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"

	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// soa is the zone's SOA: the next plugin's apex SOA when it is
// authoritative for the zone (fallthrough to file), else synthesized the
// way k8s_external does, the MNAME being the first name server the table
// lists. Each reply gets its own copy.
func (g *GSLB) soa(v *policy.View, zone string) *dns.SOA {
	if m := g.nextSOA.Load(); m != nil {
		if s := (*m)[zone]; s != nil {
			rr := *s
			return &rr
		}
	}
	o := &g.opts.SOA
	mname := o.MName
	if mname == "" {
		mname = dnsutil.Join("ns1", "dns", zone)
		if len(v.Table.Nameservers) > 0 {
			mname = v.Table.Nameservers[0]
		}
	}
	rname := o.RName
	if rname == "" {
		rname = dnsutil.Join("hostmaster", zone)
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: g.opts.TTL},
		Ns:      mname,
		Mbox:    rname,
		Serial:  v.Serial,
		Refresh: o.Refresh,
		Retry:   o.Retry,
		Expire:  o.Expire,
		Minttl:  o.Minimum,
	}
}

// soaTimeout bounds one question to the next plugin.
const soaTimeout = 2 * time.Second

// followNext keeps the next plugin's apex SOAs when gslb falls through to
// it: once before serving, so that the first negative answer carries the
// zone's SOA, then on every reload tick, in the background.
func (g *GSLB) followNext(stop <-chan struct{}, every time.Duration) {
	if g.Next == nil || len(g.Fall.Zones) == 0 {
		return
	}
	// A next plugin that is slow to answer (forward) holds the startup
	// for soaTimeout at most.
	first := make(chan struct{})
	go func() {
		defer close(first)
		recovery.Do("soa", g.refreshNextSOA)
	}()
	select {
	case <-first:
	case <-time.After(soaTimeout):
	}
	if every <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				recovery.Do("soa", g.refreshNextSOA)
			}
		}
	}()
}

// refreshNextSOA asks the next plugin for each zone's apex SOA and keeps
// the ones it answers authoritatively.
func (g *GSLB) refreshNextSOA() {
	m := map[string]*dns.SOA{}
	for _, zone := range g.Zones {
		if !g.Fall.Through(zone) {
			continue
		}
		if s := askNext(g.Next, zone); s != nil {
			m[zone] = s
		}
	}
	old := g.nextSOA.Load()
	if old != nil && sameSOAs(*old, m) {
		return
	}
	for zone, s := range m {
		log.Infof("Negative answers for %s carry the next plugin's SOA: serial %d", zone, s.Serial)
	}
	g.nextSOA.Store(&m)
}

func sameSOAs(a, b map[string]*dns.SOA) bool {
	if len(a) != len(b) {
		return false
	}
	for z, s := range a {
		if t := b[z]; t == nil || !dns.IsDuplicate(s, t) || s.Hdr.Ttl != t.Hdr.Ttl {
			return false
		}
	}
	return true
}

// askNext is the apex SOA of zone when next answers it authoritatively.
func askNext(next plugin.Handler, zone string) *dns.SOA {
	ctx, cancel := context.WithTimeout(context.Background(), soaTimeout)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(zone, dns.TypeSOA)
	w := &soaWriter{}
	_, err := next.ServeDNS(ctx, w, q)
	r := w.msg
	if err != nil || r == nil || r.Rcode != dns.RcodeSuccess || !r.Authoritative {
		return nil
	}
	for _, rr := range r.Answer {
		if s, ok := rr.(*dns.SOA); ok && strings.EqualFold(s.Hdr.Name, zone) {
			s := *s
			s.Hdr.Name = zone
			return &s
		}
	}
	return nil
}

// soaWriter keeps the reply to our own question to the next plugin.
type soaWriter struct{ msg *dns.Msg }

var loopback = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}

func (w *soaWriter) LocalAddr() net.Addr         { return loopback }
func (w *soaWriter) RemoteAddr() net.Addr        { return loopback }
func (w *soaWriter) WriteMsg(m *dns.Msg) error   { w.msg = m.Copy(); return nil }
func (w *soaWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *soaWriter) Close() error                { return nil }
func (w *soaWriter) TsigStatus() error           { return nil }
func (w *soaWriter) TsigTimersOnly(bool)         {}
func (w *soaWriter) Hijack()                     {}

// unreachableNames are the warnings for the names the zones' SOA and NS
// point to that gslb itself answers NXDOMAIN for: in a gslb zone, not a
// record of t, and not passed on by fallthrough. A resolver sent there
// finds no server.
func (g *GSLB) unreachableNames(t *table.Table) []string {
	unreachable := func(name string) bool {
		return zoneOf(g.Zones, name) != "" && t.Records[name] == nil && !g.Fall.Through(name)
	}
	var out []string
	for _, ns := range t.Nameservers {
		if unreachable(ns) {
			out = append(out, fmt.Sprintf("name server %s (the node table's nameservers) is in the zone but not a record of the node table: "+
				"gslb answers NXDOMAIN for it; add it to records, or pass it on with fallthrough to a plugin that has it", ns))
		}
	}
	for _, zone := range g.Zones {
		mname, from := g.opts.SOA.MName, "soa mname"
		if mname == "" {
			mname, from = dnsutil.Join("ns1", "dns", zone), "the default MNAME, without nameservers in the node table"
			if len(t.Nameservers) > 0 {
				continue // said above
			}
		}
		if unreachable(mname) {
			out = append(out, fmt.Sprintf("zone %s: the SOA's MNAME %s (%s) is in the zone but not a record of the node table: "+
				"gslb answers NXDOMAIN for it; list the zone's name servers under nameservers (and as records), "+
				"set soa { mname NAME }, or pass it on with fallthrough", zone, mname, from))
		}
	}
	return out
}

// warnUnreachable logs unreachableNames for t, each warning once: at
// load, and at a table reload only what is new.
func (g *GSLB) warnUnreachable(t *table.Table) {
	seen := map[string]bool{}
	for _, w := range g.unreachableNames(t) {
		seen[w] = true
		if !g.warned[w] {
			log.Warning(w)
		}
	}
	g.warned = seen
}
