package gslb

import (
	"errors"
	"fmt"

	"github.com/gslbdns/gslb/decide"

	"github.com/miekg/dns"
)

// parseECS returns the query's EDNS Client Subnet option, nil when there is
// none, or an error when the query's EDNS is malformed: FORMERR for more
// than one OPT record, and for an ECS option that breaks RFC 7871 §6.
func parseECS(r *dns.Msg) (*dns.EDNS0_SUBNET, error) {
	var o *dns.OPT
	for _, rr := range r.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			if o != nil {
				return nil, errors.New("more than one OPT record")
			}
			o = opt
		}
	}
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
	var longest uint8
	switch ecs.Family {
	case 0:
		// dig sends family 0 with a zero prefix to ask for no tailoring.
		if ecs.SourceNetmask != 0 {
			return nil, errors.New("ECS: family 0 with a non-zero prefix")
		}
		return ecs, checkOptLen(o)
	case 1:
		longest = 32
	case 2:
		longest = 128
	default:
		return nil, fmt.Errorf("ECS: unknown family %d", ecs.Family)
	}
	if ecs.SourceNetmask > longest {
		return nil, fmt.Errorf("ECS: source prefix %d longer than %d", ecs.SourceNetmask, longest)
	}
	a, ok := decide.ECSAddr(ecs)
	if !ok {
		return nil, errors.New("ECS: address does not match the family")
	}
	if p, _ := a.Prefix(int(ecs.SourceNetmask)); p.Addr() != a {
		return nil, fmt.Errorf("ECS: bits set after the /%d prefix in %s", ecs.SourceNetmask, a)
	}
	return ecs, checkOptLen(o)
}

// checkOptLen compares the OPT's length on the wire with the length its
// options need. The DNS library pads a short ECS address and drops extra
// bytes, so only the lengths show an ADDRESS with more or fewer octets than
// the source prefix needs. A message built in memory has no wire length.
func checkOptLen(o *dns.OPT) error {
	if o.Hdr.Rdlength == 0 {
		return nil
	}
	want := 0
	for _, opt := range o.Option {
		switch e := opt.(type) {
		case *dns.EDNS0_SUBNET:
			want += 4 + 4 + (int(e.SourceNetmask)+7)/8
		case *dns.EDNS0_COOKIE:
			want += 4 + len(e.Cookie)/2
		case *dns.EDNS0_PADDING:
			want += 4 + len(e.Padding)
		case *dns.EDNS0_LOCAL:
			want += 4 + len(e.Data)
		default:
			hdr := dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
			one := hdr
			one.Option = []dns.EDNS0{opt}
			want += dns.Len(&one) - dns.Len(&hdr)
		}
	}
	if int(o.Hdr.Rdlength) != want {
		return fmt.Errorf("ECS: option length does not match its source prefix (OPT data %d bytes, want %d)", o.Hdr.Rdlength, want)
	}
	return nil
}
