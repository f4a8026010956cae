package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
)

// bitset24 has one bit per IPv4 /24.
type bitset24 []uint64

func newBitset24() bitset24          { return make(bitset24, (1<<24)/64) }
func (b bitset24) set(i uint32)      { b[i/64] |= 1 << (i % 64) }
func (b bitset24) has(i uint32) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset24) list() []uint32 {
	var out []uint32
	for w, v := range b {
		for v != 0 {
			bit := bits.TrailingZeros64(v)
			out = append(out, uint32(w)*64+uint32(bit))
			v &^= 1 << bit
		}
	}
	return out
}

func slash24(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

func cmdSubnets(args []string) error {
	fs := flag.NewFlagSet("subnets", flag.ExitOnError)
	seed := fs.Uint64("seed", 1, "random seed")
	csvPath := fs.String("csv", "", "ip-location-db asn-ipv4.csv")
	n := fs.Int("n", 20000, "number of distinct /24s to write")
	fill := fs.Bool("fill", false, "when the Chinese carriers have fewer than -n /24s, fill up with other routed /24s")
	only := fs.String("carriers", "telecom,unicom,mobile,edu", "carriers whose /24s are drawn")
	random := fs.Bool("random", false, "no ASN data (offline): draw /24s uniformly from the public IPv4 space instead")
	out := fs.String("out", "-", "output file, one CIDR a line (- for stdout)")
	fs.Parse(args)
	if (*csvPath == "") == !*random || *n <= 0 {
		return fmt.Errorf("need -csv or -random, and -n > 0")
	}
	r := rand.New(rand.NewPCG(*seed, 0x7375626e657473)) // "subnets"
	if *random {
		return writeFile(*out, func(w *bufio.Writer) error { return randomSubnets(w, r, *n) })
	}
	want := map[uint32]string{}
	for _, c := range strings.Split(*only, ",") {
		asns, ok := carrierASNs[strings.TrimSpace(c)]
		if !ok {
			return fmt.Errorf("unknown carrier %q", c)
		}
		for _, a := range asns {
			want[a] = c
		}
	}
	pool, other := newBitset24(), newBitset24()
	perCarrier := map[string]int{}
	err := readASNCSV(*csvPath, func(ar asnRange) error {
		if !ar.Start.Is4() {
			return nil
		}
		c, ok := want[ar.ASN]
		set := other
		if ok {
			set = pool
		}
		for i := slash24(ar.Start); i <= slash24(ar.End); i++ {
			if ok && !pool.has(i) {
				perCarrier[c]++
			}
			set.set(i)
		}
		return nil
	})
	if err != nil {
		return err
	}
	picked := pool.list()
	r.Shuffle(len(picked), func(i, j int) { picked[i], picked[j] = picked[j], picked[i] })
	fmt.Fprintf(os.Stderr, "subnets: %d distinct carrier /24s in %s (%v)\n", len(picked), *csvPath, perCarrier)
	if len(picked) > *n {
		picked = picked[:*n]
	} else if len(picked) < *n {
		if !*fill {
			return fmt.Errorf("only %d carrier /24s, -n %d asked (use -fill)", len(picked), *n)
		}
		var rest []uint32
		for _, i := range other.list() {
			a := netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0})
			if !pool.has(i) && insertable(netip.PrefixFrom(a, 24)) {
				rest = append(rest, i)
			}
		}
		r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		k := min(*n-len(picked), len(rest))
		fmt.Fprintf(os.Stderr, "subnets: WARNING: filled up with %d other routed /24s (not Chinese carriers)\n", k)
		picked = append(picked, rest[:k]...)
		// Interleave the fill with the carriers' /24s.
		r.Shuffle(len(picked), func(i, j int) { picked[i], picked[j] = picked[j], picked[i] })
	}
	return writeFile(*out, func(w *bufio.Writer) error {
		for _, i := range picked {
			fmt.Fprintf(w, "%d.%d.%d.0/24\n", i>>16, (i>>8)&0xff, i&0xff)
		}
		return nil
	})
}

// randomSubnets writes n distinct /24s drawn uniformly from the public IPv4
// unicast space (1.0.0.0-223.255.255.0, reserved networks excluded).
func randomSubnets(w *bufio.Writer, r *rand.Rand, n int) error {
	if n > 1<<22 {
		return fmt.Errorf("-n %d: too many for random draws", n)
	}
	seen := newBitset24()
	for k := 0; k < n; {
		i := uint32(1<<16 + r.IntN(223<<16))
		a := netip.AddrFrom4([4]byte{byte(i >> 16), byte(i >> 8), byte(i), 0})
		if seen.has(i) || !insertable(netip.PrefixFrom(a, 24)) {
			continue
		}
		seen.set(i)
		k++
		fmt.Fprintf(w, "%s/24\n", a)
	}
	fmt.Fprintf(os.Stderr, "subnets: WARNING: %d random public /24s (no ASN data: not Chinese carrier space)\n", n)
	return nil
}
