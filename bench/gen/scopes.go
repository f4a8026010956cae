package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/mmdbgen"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
	"github.com/oschwald/maxminddb-golang/v2"
)

// cmdScopes measures what an ECS-caching resolver pays for the replies'
// scopes: over /24 queries (ECS source /24), its entries are the distinct
// (scope network, answer) pairs, reported per /24. It compares the
// databases' own networks with one answer per /24 for the spread (as
// before) against merged networks with the spread hashed per unit.
func cmdScopes(args []string) error {
	fs := flag.NewFlagSet("scopes", flag.ExitOnError)
	city := fs.String("city", "", "City mmdb (with -asn); empty: -synth")
	asn := fs.String("asn", "", "ASN mmdb")
	subnets := fs.String("subnets", "", "one /24 CIDR a line (gen subnets); empty: -n random /24s of the synthetic data")
	n := fs.Int("n", 20000, "with -synth: how many /24s")
	seed := fs.Uint64("seed", 1, "random seed (nodes, synthetic data)")
	spreadPrefix := fs.Int("spread-prefix", locate.DefaultSpreadPrefix4, "spread_prefix")
	fs.Parse(args)
	var subs []netip.Prefix
	var err error
	if *city == "" {
		dir, err := os.MkdirTemp("", "gslb-scopes")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*city, *asn = filepath.Join(dir, "c.mmdb"), filepath.Join(dir, "a.mmdb")
		if subs, err = synthChina(*city, *asn, *seed, *n); err != nil {
			return err
		}
	} else if subs, err = readSubnets(*subnets); err != nil {
		return err
	}
	db, err := geo.Open(*city, *asn)
	if err != nil {
		return err
	}
	raw := []*maxminddb.Reader{}
	for _, p := range []string{*city, *asn} {
		if p == "" {
			continue
		}
		r, err := maxminddb.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		raw = append(raw, r)
	}
	var y bytes.Buffer
	w := bufio.NewWriter(&y)
	nodes := siteNodes(*seed)
	fmt.Fprintln(w, "nodes:")
	for _, nd := range nodes {
		fmt.Fprintf(w, "  - {id: %s, ipv4: [%s], country: CN, province: %s, isp: %s, lat: %.2f, lon: %.2f, cost: %.1f, load: %.2f}\n",
			nd.ID, nd.V4, nd.Province, nd.ISP, nd.Lat, nd.Lon, nd.Cost, nd.Load)
	}
	fmt.Fprintln(w, "records:\n  - name: www.example.org")
	w.Flush()
	tb, err := table.Parse("nodes.yaml", y.Bytes(), []string{"example.org."}, 60)
	if err != nil {
		return err
	}
	rec := tb.Records["www.example.org."]
	none := scoring.DefaultParams
	none.Spread = 0
	fmt.Printf("%d /24s, spread_prefix /%d\n", len(subs), *spreadPrefix)
	for _, mode := range []struct {
		name   string
		params *scoring.Params
		merged bool
	}{{"before: own networks, spread per /24, spread 0.1", &scoring.DefaultParams, false}, {"before: own networks, spread 0", &none, false},
		{"merged networks, spread per unit, spread 0.1", &scoring.DefaultParams, true}, {"merged networks, spread 0", &none, true}} {
		v, _ := policy.NewView(policy.Inputs{Table: tb, Snapshot: health.NewSnapshot(nil), Params: mode.params, Now: time.Now()})
		type entry struct {
			net    netip.Prefix
			answer string
		}
		entries := map[entry]bool{}
		hist := map[int]int{}
		for _, p := range subs {
			a := p.Addr()
			loc := db.Lookup(a)
			tb.Carriers.Apply(&loc)
			bits := loc.Bits
			if !mode.merged {
				bits = 0
				for _, r := range raw {
					if res := r.Lookup(a); res.Err() == nil && res.Prefix().Bits() >= 0 {
						bits = max(bits, uint8(res.Prefix().Bits()))
					}
				}
			}
			res := locate.Result{Location: loc, Key: locate.KeyOf(a), Scope: bits}
			key, unitBits := res.Key, res.Key.Bits()
			if mode.merged {
				key, unitBits = res.SpreadUnit(uint8(*spreadPrefix), locate.DefaultSpreadPrefix6)
			}
			c := scoring.Client{Country: loc.Country, Continent: loc.Continent, Province: loc.Province, ISP: loc.ISP,
				HasCoords: loc.HasCoords, Lat: loc.Lat, Lon: loc.Lon, ProvinceLevel: loc.ProvinceCoords}
			d := v.Decide(&policy.Query{Record: rec, QType: dns.TypeA, Client: c, Subnet: uint64(key)})
			scope := bits
			if d.PerSubnet {
				scope = max(scope, unitBits)
			}
			scope = min(scope, 24)
			hist[int(scope)]++
			answer := ""
			if d.Winner != nil {
				answer = d.Winner.ID
			}
			net, _ := a.Prefix(int(scope))
			entries[entry{net, answer}] = true
		}
		fmt.Printf("%-50s resolver_entries_per_subnet %.3f  scopes:", mode.name, float64(len(entries))/float64(len(subs)))
		var ks []int
		for k := range hist {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		for _, k := range ks {
			fmt.Printf(" /%d:%.1f%%", k, 100*float64(hist[k])/float64(len(subs)))
		}
		fmt.Println()
	}
	return nil
}

// synthChina writes City and ASN databases shaped like China's carrier
// space (no real data): each carrier's blocks of /11 to /16 belong to a
// province, cut into city networks of /15 to /24 (a third of them further
// cut into /24s that differ only in accuracy radius, as GeoLite2's often
// do), with one ASN per carrier and a provincial one for some blocks. It
// returns n random /24s of that space.
func synthChina(cityPath, asnPath string, seed uint64, n int) ([]netip.Prefix, error) {
	r := rand.New(rand.NewPCG(seed, 0x73796e7468)) // "synth"
	spaces := []struct {
		first byte
		asn   uint32
		org   string
	}{{58, 4134, "Chinanet"}, {60, 4837, "CHINA UNICOM China169 Backbone"}, {111, 9808, "China Mobile Communications Group Co. Ltd."},
		{117, 4134, "Chinanet"}, {112, 4837, "CHINA UNICOM China169 Backbone"}, {120, 9808, "China Mobile Communications Group Co. Ltd."}}
	var cities []mmdbgen.City
	var asns []mmdbgen.ASN
	var space []netip.Prefix
	for _, sp := range spaces {
		base := uint32(sp.first) << 24
		for off := uint32(0); off < 1<<24; {
			size := uint32(1) << (32 - (11 + r.IntN(6))) // /11../16
			size = min(size, 1<<24-off)
			st := sites[r.IntN(len(sites))]
			blk := netip.PrefixFrom(addr4(base+off), 32-log2(size))
			space = append(space, blk)
			asn, org := sp.asn, sp.org
			if r.IntN(4) == 0 {
				asn, org = 17000+uint32(r.IntN(1000)), org+" "+st.City
			}
			asns = append(asns, mmdbgen.ASN{Network: blk.String(), ASN: asn, Org: org})
			for c := uint32(0); c < size; {
				csize := min(uint32(1)<<(32-(15+r.IntN(10))), size-c) // /15../24
				lat, lon, name := st.Lat, st.Lon, st.City
				if k := r.IntN(4); k > 0 {
					lat, lon, name = st.Lat+float64(k)*0.3, st.Lon+float64(k)*0.4, fmt.Sprintf("%s-%d", st.City, k)
				}
				cut := csize > 256 && r.IntN(3) == 0
				for s := uint32(0); s < csize; {
					step := csize
					if cut {
						step = 256
					}
					cities = append(cities, mmdbgen.City{Network: netip.PrefixFrom(addr4(base+off+c+s), 32-log2(step)).String(),
						Country: "CN", Province: st.Code, City: name, Lat: lat, Lon: lon, Radius: uint16(20 + r.IntN(3)*30)})
					s += step
				}
				c += csize
			}
			off += size
		}
	}
	if err := mmdbgen.WriteCity(cityPath, cities); err != nil {
		return nil, err
	}
	if err := mmdbgen.WriteASN(asnPath, asns); err != nil {
		return nil, err
	}
	seen := map[netip.Prefix]bool{}
	var out []netip.Prefix
	for len(out) < n {
		blk := space[r.IntN(len(space))]
		a4 := blk.Addr().As4()
		a := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8
		a += uint32(r.IntN(1<<(24-blk.Bits()))) << 8
		p := netip.PrefixFrom(addr4(a), 24)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func addr4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

func log2(x uint32) int {
	k := 0
	for x > 1 {
		x >>= 1
		k++
	}
	return k
}
