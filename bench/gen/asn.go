package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/gslbdns/gslb/geo/mmdbgen"
)

// carrierASNs are the big Chinese carriers' ASNs (the same table as the
// plugin's built-in one in geo/carrier.go), by carrier.
var carrierASNs = map[string][]uint32{
	"telecom": {4134, 4809, 4811, 4812, 4813, 4816, 4835, 23724, 17633, 17638, 17785, 58461, 58466, 58563,
		134756, 134774, 136188, 136190, 140061, 140292},
	"unicom": {4837, 4808, 9800, 9929, 10099, 17621, 17622, 17623, 17816, 135061},
	"mobile": {9808, 9231, 9394, 24400, 24444, 24445, 24547, 38019, 56040, 56041, 56042, 56043, 56044, 56045,
		56046, 56047, 56048, 58453, 58807, 132525, 134810},
	"edu": {4538, 4565, 23910},
}

// asnRange is one row of an @ip-location-db/asn CSV: an inclusive range.
type asnRange struct {
	Start, End netip.Addr
	ASN        uint32
	Org        string
}

// readASNCSV calls fn for every row of an ip-location-db ASN CSV
// (ip_range_start,ip_range_end,autonomous_system_number,autonomous_system_organization).
func readASNCSV(path string, fn func(asnRange) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	for line := 1; ; line++ {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(row) < 3 {
			return fmt.Errorf("%s:%d: want start,end,asn[,org], got %d fields", path, line, len(row))
		}
		var ar asnRange
		ar.Start, err = netip.ParseAddr(row[0])
		if err == nil {
			ar.End, err = netip.ParseAddr(row[1])
		}
		if err != nil {
			if line == 1 { // a header
				continue
			}
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		n, err := strconv.ParseUint(row[2], 10, 32)
		if err != nil {
			return fmt.Errorf("%s:%d: bad ASN %q", path, line, row[2])
		}
		ar.ASN = uint32(n)
		if len(row) > 3 {
			ar.Org = strings.TrimSpace(row[3])
		}
		if ar.Start.BitLen() != ar.End.BitLen() || ar.End.Less(ar.Start) {
			return fmt.Errorf("%s:%d: bad range %s-%s", path, line, ar.Start, ar.End)
		}
		if err := fn(ar); err != nil {
			return err
		}
	}
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	if a.Is4() {
		b := a.As4()
		setHostBits(b[:], p.Bits())
		return netip.AddrFrom4(b)
	}
	b := a.As16()
	setHostBits(b[:], p.Bits())
	return netip.AddrFrom16(b)
}

func setHostBits(b []byte, bits int) {
	for i := bits; i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
}

// rangePrefixes splits the inclusive range start..end (same family) into the
// fewest prefixes that cover exactly it, in address order.
func rangePrefixes(start, end netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for {
		bits := start.BitLen()
		// Widen while the prefix still starts at start and ends by end.
		for bits > 0 {
			p := netip.PrefixFrom(start, bits-1)
			if p.Masked().Addr() != start || end.Less(lastAddr(p)) {
				break
			}
			bits--
		}
		p := netip.PrefixFrom(start, bits)
		out = append(out, p)
		last := lastAddr(p)
		if !last.Less(end) {
			return out
		}
		start = last.Next()
	}
}

// mmdbwriter refuses inserts inside its reserved networks and the IPv6
// networks aliased to the IPv4 tree; such rows are skipped.
var (
	reservedInside = mustPrefixes("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/29", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"100::/64", "2001:1::/32", "2001:2::/31", "2001:4::/30", "2001:8::/29", "2001:10::/28", "2001:20::/27",
		"2001:40::/26", "2001:80::/25", "2001:100::/24", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8")
	aliased = mustPrefixes("::/96", "::ffff:0:0/96", "2001::/32", "2002::/16")
	global6 = netip.MustParsePrefix("2000::/3")
)

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// insertable reports whether mmdbwriter (default options) accepts p.
func insertable(p netip.Prefix) bool {
	for _, r := range reservedInside {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return false
		}
	}
	if p.Addr().Is6() {
		if !global6.Overlaps(p) || global6.Bits() > p.Bits() {
			return false
		}
		for _, a := range aliased {
			if a.Overlaps(p) {
				return false
			}
		}
	}
	return true
}

func cmdASN(args []string) error {
	fs := flag.NewFlagSet("asn", flag.ExitOnError)
	out := fs.String("out", "", "ASN mmdb to write")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gen asn -out FILE.mmdb CSV... (ip-location-db asn-ipv4.csv, asn-ipv6.csv)")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		os.Exit(2)
	}
	var recs []mmdbgen.ASN
	rows, skipped := 0, 0
	for _, path := range fs.Args() {
		err := readASNCSV(path, func(ar asnRange) error {
			rows++
			for _, p := range rangePrefixes(ar.Start, ar.End) {
				if !insertable(p) {
					skipped++
					continue
				}
				recs = append(recs, mmdbgen.ASN{Network: p.String(), ASN: ar.ASN, Org: ar.Org})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := mmdbgen.WriteASN(*out, recs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d rows, %d networks (%d reserved or aliased skipped)\n", *out, rows, len(recs), skipped)
	return nil
}
