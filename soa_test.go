package gslb

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin"

	"github.com/miekg/dns"
)

// TestNextSOA: the next plugin's apex SOA is taken only when it answers it
// authoritatively for the zone; a panicking next plugin is survived.
func TestNextSOA(t *testing.T) {
	soa := func(owner string) dns.RR {
		rr, err := dns.NewRR(owner + " 3600 IN SOA ns1.example.org. hostmaster.example.org. 7 14400 3600 1209600 300")
		if err != nil {
			t.Fatal(err)
		}
		return rr
	}
	reply := func(aa bool, rcode int, rrs ...dns.RR) plugin.Handler {
		return plugin.HandlerFunc(func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
			m := new(dns.Msg)
			m.SetRcode(r, rcode)
			m.Authoritative = aa
			m.Answer = rrs
			w.WriteMsg(m)
			return rcode, nil
		})
	}
	tests := []struct {
		name string
		next plugin.Handler
		fall []string
		want bool
	}{
		{"authoritative", reply(true, dns.RcodeSuccess, soa("example.org.")), nil, true},
		{"owner case", reply(true, dns.RcodeSuccess, soa("Example.ORG.")), nil, true},
		{"fallthrough for the zone", reply(true, dns.RcodeSuccess, soa("example.org.")), []string{"example.org"}, true},
		{"not authoritative", reply(false, dns.RcodeSuccess, soa("example.org.")), nil, false},
		{"another zone's SOA", reply(true, dns.RcodeSuccess, soa("org.")), nil, false},
		{"refused", reply(true, dns.RcodeRefused), nil, false},
		{"no answer", reply(true, dns.RcodeSuccess), nil, false},
		{"fallthrough elsewhere", reply(true, dns.RcodeSuccess, soa("example.org.")), []string{"other.org"}, false},
		{"panics", plugin.HandlerFunc(func(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
			panic("next plugin")
		}), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &GSLB{Zones: []string{"example.org."}, Next: tc.next}
			g.Fall.SetZonesFromArgs(tc.fall)
			g.followNext(nil, 0)
			var got *dns.SOA
			if m := g.nextSOA.Load(); m != nil {
				got = (*m)["example.org."]
			}
			if (got != nil) != tc.want {
				t.Fatalf("Next plugin's SOA %v, want one: %v", got, tc.want)
			}
			if got != nil && (got.Hdr.Name != "example.org." || got.Serial != 7) {
				t.Errorf("SOA %s, want example.org.'s with serial 7", got)
			}
		})
	}
}
