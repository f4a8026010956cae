package gslb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// parseECS returns the query's EDNS Client Subnet option, nil when there is
// none, or an error when it is malformed (RFC 7871 §7.1: FORMERR).
func parseECS(r *dns.Msg) (*dns.EDNS0_SUBNET, error) {
	o := r.IsEdns0()
	if o == nil {
		return nil, nil
	}
	var ecs *dns.EDNS0_SUBNET
	for _, opt := range o.Option {
		e, ok := opt.(*dns.EDNS0_SUBNET)
		if !ok {
			continue
		}
		if ecs != nil {
			return nil, errors.New("ECS: more than one option")
		}
		ecs = e
	}
	if ecs == nil {
		return nil, nil
	}
	var max uint8
	switch ecs.Family {
	case 0:
		// dig sends family 0 with a zero prefix to ask for no tailoring.
		if ecs.SourceNetmask != 0 {
			return nil, errors.New("ECS: family 0 with a non-zero prefix")
		}
		return ecs, nil
	case 1:
		max = 32
	case 2:
		max = 128
	default:
		return nil, fmt.Errorf("ECS: unknown family %d", ecs.Family)
	}
	if ecs.SourceNetmask > max {
		return nil, fmt.Errorf("ECS: source prefix %d longer than %d", ecs.SourceNetmask, max)
	}
	a, ok := ecsAddr(ecs)
	if !ok {
		return nil, errors.New("ECS: address does not match the family")
	}
	if p, _ := a.Prefix(int(ecs.SourceNetmask)); p.Addr() != a {
		return nil, fmt.Errorf("ECS: bits set after the /%d prefix in %s", ecs.SourceNetmask, a)
	}
	return ecs, nil
}

func ecsAddr(ecs *dns.EDNS0_SUBNET) (netip.Addr, bool) {
	switch ecs.Family {
	case 1:
		ip4 := ecs.Address.To4()
		if ip4 == nil {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(ip4)), true
	case 2:
		ip16 := ecs.Address.To16()
		if ip16 == nil || len(ecs.Address) != net.IPv6len {
			return netip.Addr{}, false
		}
		return netip.AddrFrom16([16]byte(ip16)), true
	}
	return netip.Addr{}, false
}

// ecsClient returns the ECS address when it is specific enough to be trusted
// over the resolver's own address.
func ecsClient(ecs *dns.EDNS0_SUBNET, min4, min6 uint8) (netip.Addr, bool) {
	if ecs == nil || ecs.SourceNetmask == 0 {
		return netip.Addr{}, false
	}
	if ecs.Family == 1 && ecs.SourceNetmask < min4 || ecs.Family == 2 && ecs.SourceNetmask < min6 {
		return netip.Addr{}, false
	}
	return ecsAddr(ecs)
}

// addECS puts an OPT with the ECS option and its scope into the reply:
// CoreDNS drops EDNS options it doesn't know unless the reply has its own OPT.
func addECS(m, r *dns.Msg, ecs *dns.EDNS0_SUBNET, scope uint8) {
	if ecs == nil {
		return
	}
	o := r.IsEdns0()
	reply := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	reply.SetUDPSize(o.UDPSize())
	if o.Do() {
		reply.SetDo()
	}
	reply.Option = []dns.EDNS0{&dns.EDNS0_SUBNET{
		Code:          dns.EDNS0SUBNET,
		Family:        ecs.Family,
		SourceNetmask: ecs.SourceNetmask,
		SourceScope:   scope,
		Address:       ecs.Address,
	}}
	m.Extra = append(m.Extra, reply)
}
