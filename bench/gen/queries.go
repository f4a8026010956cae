package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/miekg/dns"
)

// readSubnets reads one CIDR a line ('#' comments and blank lines skipped).
func readSubnets(path string) ([]netip.Prefix, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []netip.Prefix
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, p.Masked())
	}
	return out, sc.Err()
}

// packQuery packs one query for name/qtype with EDNS0 (UDP size 1232) and,
// when ecs is valid, an ECS option with ecs's address and source prefix. RD
// is off, as from a resolver to an authoritative server.
func packQuery(id uint16, name string, qtype uint16, ecs netip.Prefix) ([]byte, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.Id = id
	m.RecursionDesired = false
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetUDPSize(1232)
	if ecs.IsValid() {
		e := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, SourceNetmask: uint8(ecs.Bits()), Address: ecs.Addr().AsSlice()}
		e.Family = 1
		if ecs.Addr().Is6() {
			e.Family = 2
		}
		o.Option = append(o.Option, e)
	}
	m.Extra = append(m.Extra, o)
	return m.Pack()
}

func cmdQueries(args []string) error {
	fs := flag.NewFlagSet("queries", flag.ExitOnError)
	subnets := fs.String("subnets", "", "subnets file (gen subnets), one CIDR a line")
	mode := fs.String("mode", "warm", "warm: -distinct subnets cycling over -count queries; cold: every query a new subnet")
	distinct := fs.Int("distinct", 20000, "warm: number of distinct subnets (the file's first ones)")
	count := fs.Int("count", 0, "number of queries (warm default: -distinct; cold default: every subnet of the file)")
	name := fs.String("name", "www.example.org", "query name")
	qtype := fs.String("type", "A", "query type")
	ecs := fs.Bool("ecs", true, "add the ECS option (false: the same queries without ECS)")
	out := fs.String("out", "", "dnsperf -B file to write")
	fs.Parse(args)
	if *subnets == "" || *out == "" {
		return fmt.Errorf("need -subnets and -out")
	}
	t, ok := dns.StringToType[strings.ToUpper(*qtype)]
	if !ok {
		return fmt.Errorf("unknown type %q", *qtype)
	}
	nets, err := readSubnets(*subnets)
	if err != nil {
		return err
	}
	switch *mode {
	case "warm":
		if *distinct <= 0 || *distinct > len(nets) {
			return fmt.Errorf("-distinct %d: the file has %d subnets", *distinct, len(nets))
		}
		nets = nets[:*distinct]
		if *count == 0 {
			*count = *distinct
		}
	case "cold":
		if *count == 0 {
			*count = len(nets)
		}
		if *count > len(nets) {
			return fmt.Errorf("-count %d: the file has only %d subnets, cold queries never repeat one", *count, len(nets))
		}
	default:
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	err = writeFile(*out, func(w *bufio.Writer) error {
		var l [2]byte
		for i := range *count {
			p := nets[i%len(nets)]
			if !*ecs {
				p = netip.Prefix{}
			}
			b, err := packQuery(uint16(i), *name, t, p)
			if err != nil {
				return err
			}
			binary.BigEndian.PutUint16(l[:], uint16(len(b)))
			w.Write(l[:])
			w.Write(b)
		}
		return nil
	})
	if err == nil {
		fmt.Fprintf(os.Stderr, "wrote %s: %d queries %s %s, %d distinct subnets, ecs=%v\n", *out, *count, *name, *qtype, min(len(nets), *count), *ecs)
	}
	return err
}
