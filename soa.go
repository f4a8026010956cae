package gslb

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"

	"github.com/gslbdns/gslb/control"
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

// warnUnreachable logs control.UnreachableNames for a reloaded t, only
// what is new: the start logged the first ones.
func (g *GSLB) warnUnreachable(t *table.Table) {
	seen := map[string]bool{}
	for _, w := range control.UnreachableNames(g.opts, t) {
		seen[w] = true
		if !g.warned[w] {
			log.Warning(w)
		}
	}
	g.warned = seen
}
