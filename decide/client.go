package decide

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Client is the address a decision is for: with Bits >= 0 it arrives as
// the ECS option ADDRESS/Bits, else as the resolver's own address. Remote
// is the resolver's address when it is known and differs (a dnstap query):
// the server falls back to it when the ECS prefix is too short.
type Client struct {
	Addr   netip.Addr
	Bits   int
	Mapped bool // the ECS option carried an IPv4-mapped IPv6 address: family 2
	Remote netip.Addr
}

// ParseClient reads ADDRESS or ADDRESS/PREFIX.
func ParseClient(s string) (Client, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Client{}, fmt.Errorf("client %q: %v", s, err)
		}
		if p.Addr().Zone() != "" {
			return Client{}, fmt.Errorf("client %q: a zone has no place in a prefix", s)
		}
		c := Client{Bits: p.Bits()}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return Client{}, fmt.Errorf("client %q: an IPv4-mapped prefix is /96 or longer", s)
			}
			c.Mapped, c.Bits = true, p.Bits()-96
		}
		q := netip.PrefixFrom(p.Addr().Unmap(), c.Bits).Masked()
		if !q.IsValid() {
			return Client{}, fmt.Errorf("client %q: not a prefix", s)
		}
		c.Addr = q.Addr()
		return c, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return Client{}, fmt.Errorf("client %q: not an address", s)
	}
	return Client{Addr: a.Unmap(), Bits: -1}, nil
}

func (c Client) String() string {
	switch {
	case c.Bits < 0:
		return c.Addr.String()
	case c.Mapped:
		return netip.PrefixFrom(netip.AddrFrom16(c.Addr.As16()), c.Bits+96).String()
	}
	return netip.PrefixFrom(c.Addr, c.Bits).String()
}

// assumedResolver is the tools' resolver when none is known: the client
// itself, trusted with its ECS whatever trust_ecs says.
type assumedResolver struct{ net.UDPAddr }

// query is the ECS option and the resolver address a query for c carries.
func (c Client) query() (*dns.EDNS0_SUBNET, net.Addr) {
	var remote net.Addr = &assumedResolver{net.UDPAddr{IP: c.Addr.AsSlice(), Port: 53}}
	if c.Remote.IsValid() {
		remote = &net.UDPAddr{IP: c.Remote.AsSlice(), Port: 53}
	}
	if c.Bits < 0 {
		return nil, remote
	}
	switch {
	case c.Mapped:
		a := c.Addr.As16()
		return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: uint8(c.Bits + 96),
			Address: net.IP(a[:])}, remote
	case c.Addr.Is6():
		return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 2, SourceNetmask: uint8(c.Bits),
			Address: net.IP(c.Addr.AsSlice())}, remote
	}
	return &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(c.Bits),
		Address: net.IP(c.Addr.AsSlice())}, remote
}

// Record finds name's record in v, "" being the first, with an error that
// lists the known ones.
func Record(v *policy.View, name string) (*table.Record, error) {
	if name == "" {
		if len(v.Table.Names) == 0 {
			return nil, fmt.Errorf("node table %s has no records", v.Table.Path)
		}
		name = v.Table.Names[0]
	}
	fq := dns.Fqdn(strings.ToLower(name))
	if r := v.Table.Records[fq]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("unknown name %s: node table %s has %s", fq, v.Table.Path, strings.Join(v.Table.Names, ", "))
}

// For decides a query for client c the way the server does; name "" is
// the first record.
func (d *Decider) For(ctx context.Context, c Client, name string, qtype uint16, out *Outcome) error {
	v := d.src.View()
	rec, err := Record(v, name)
	if err != nil {
		return err
	}
	ecs, remote := c.query()
	d.Decide(ctx, &Query{View: v, Record: rec, QType: qtype, Remote: remote, ECS: ecs}, out)
	return nil
}
