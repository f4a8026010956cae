package decide

import (
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// ECSAddr is the option's address, when it matches its family.
func ECSAddr(ecs *dns.EDNS0_SUBNET) (netip.Addr, bool) {
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
	return ECSAddr(ecs)
}

// replyScope is the shortest prefix over which the answer holds: what the
// location vouches for, narrowed to the spread's unit when that picked the
// node (to the client's /24 (/48) when the canary did), in the option's
// family and never beyond its source prefix.
func (o *Outcome) replyScope(family uint16, source uint8, canaried bool) uint8 {
	scope := o.Loc.Scope
	if o.Decision.PerSubnet {
		scope = max(scope, o.UnitBits)
	}
	if canaried {
		scope = max(scope, o.Loc.Key.Bits())
	}
	if family == 2 && o.Loc.Key.Is4() {
		// An IPv4-mapped client was located as IPv4.
		scope += 96
	}
	return min(scope, source)
}

// RemoteAddr is the address of a resolver, IPv4-mapped ones as IPv4.
func RemoteAddr(a net.Addr) netip.Addr {
	var ip net.IP
	switch t := a.(type) {
	case *net.UDPAddr:
		ip = t.IP
	case *net.TCPAddr:
		ip = t.IP
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap.Addr().Unmap()
		}
		return netip.Addr{}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}
