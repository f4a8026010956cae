package sign

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const zone = "example.test."

// writeKey writes a new ECDSA P-256 key pair for z in BIND format and
// returns its base name.
func writeKey(t testing.TB, dir, z string, flags uint16) string {
	t.Helper()
	return writeKeyAlg(t, dir, z, flags, dns.ECDSAP256SHA256, 256)
}

func writeKeyAlg(t testing.TB, dir, z string, flags uint16, alg uint8, bits int) string {
	t.Helper()
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: flags, Protocol: 3, Algorithm: alg}
	priv, err := k.Generate(bits)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, fmt.Sprintf("K%s+%03d+%05d", z, k.Algorithm, k.KeyTag()))
	if err := os.WriteFile(base+".key", []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".private", []byte(k.PrivateKeyString(priv)), 0o600); err != nil {
		t.Fatal(err)
	}
	return base
}

// signer loads a Signer for zone from new keys with the given flags.
func signer(t testing.TB, flags ...uint16) *Signer {
	t.Helper()
	dir := t.TempDir()
	var c Config
	for _, f := range flags {
		c.Keys = append(c.Keys, writeKey(t, dir, zone, f))
	}
	m, err := Load([]string{zone}, c)
	if err != nil {
		t.Fatal(err)
	}
	return m[zone]
}

func rr(t testing.TB, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reply is a reply to name/qtype with the DO bit and an ECS option.
func reply(name string, qtype uint16, rcode int, answer, ns []dns.RR) *dns.Msg {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	m := new(dns.Msg)
	m.SetRcode(q, rcode)
	m.Authoritative = true
	m.Answer = answer
	m.Ns = ns
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetDo()
	o.SetUDPSize(1232)
	o.Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, SourceScope: 24, Address: net.IPv4(198, 51, 100, 0)}}
	m.Extra = []dns.RR{o}
	return m
}

// verify checks that every RRset of m in zone carries a signature by each
// key of want that verifies against it and is valid now, and returns the
// signatures by covered type.
func verify(t testing.TB, s *Signer, m *dns.Msg, want map[uint16][]uint16) map[uint16][]*dns.RRSIG {
	t.Helper()
	keys := map[uint16]*dns.DNSKEY{}
	for i := range s.dnskey {
		keys[s.dnskey[i].KeyTag()] = &s.dnskey[i]
	}
	got := map[uint16][]*dns.RRSIG{}
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		sets := map[uint16][]dns.RR{}
		sigs := map[uint16][]*dns.RRSIG{}
		for _, r := range sec {
			switch r := r.(type) {
			case *dns.OPT:
			case *dns.RRSIG:
				sigs[r.TypeCovered] = append(sigs[r.TypeCovered], r)
			default:
				sets[r.Header().Rrtype] = append(sets[r.Header().Rrtype], r)
			}
		}
		for typ, set := range sets {
			var tags []uint16
			for _, sig := range sigs[typ] {
				k := keys[sig.KeyTag]
				if k == nil {
					t.Fatalf("RRSIG for %s by unknown key %d", dns.TypeToString[typ], sig.KeyTag)
				}
				if err := sig.Verify(k, set); err != nil {
					t.Errorf("RRSIG %s by key %d does not verify: %v", dns.TypeToString[typ], sig.KeyTag, err)
				}
				// A resolver caps the RRset's TTL at the original TTL.
				if ttl := set[0].Header().Ttl; sig.OrigTtl != ttl || sig.Hdr.Ttl != ttl {
					t.Errorf("RRSIG %s has original TTL %d and TTL %d, want the RRset's %d", dns.TypeToString[typ], sig.OrigTtl, sig.Hdr.Ttl, ttl)
				}
				if !sig.ValidityPeriod(time.Now()) {
					t.Errorf("RRSIG %s is not valid now: %s", dns.TypeToString[typ], sig)
				}
				if sig.Hdr.Ttl != set[0].Header().Ttl {
					t.Errorf("RRSIG %s has TTL %d, its RRset %d", dns.TypeToString[typ], sig.Hdr.Ttl, set[0].Header().Ttl)
				}
				tags = append(tags, sig.KeyTag)
				got[typ] = append(got[typ], sig)
			}
			slices.Sort(tags)
			w := slices.Clone(want[typ])
			slices.Sort(w)
			if !slices.Equal(tags, w) {
				t.Errorf("RRset %s signed by keys %v, want %v", dns.TypeToString[typ], tags, w)
			}
		}
		for typ := range sigs {
			if sets[typ] == nil {
				t.Errorf("RRSIG for %s without its RRset in the same section", dns.TypeToString[typ])
			}
		}
	}
	return got
}

// tags are the key tags of s's keys: signing ones that are KSKs, and ZSKs.
func tags(s *Signer) (ksk, zsk []uint16) {
	for i := range s.dnskey {
		if s.dnskey[i].Flags&dns.SEP != 0 {
			ksk = append(ksk, s.dnskey[i].KeyTag())
		} else {
			zsk = append(zsk, s.dnskey[i].KeyTag())
		}
	}
	return ksk, zsk
}
