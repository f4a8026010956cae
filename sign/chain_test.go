package sign

import (
	"bytes"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/miekg/dns"
)

func TestHashMatchesLibrary(t *testing.T) {
	for _, salt := range []string{"", "aabbccdd"} {
		for _, iter := range []uint16{0, 1, 5} {
			ch := &Chain{iter: iter, salt: salt}
			ch.saltRaw, _ = hex.DecodeString(salt)
			for _, n := range []string{"example.org.", "WWW.Example.org.", "a.b.c.example.org.", "."} {
				h, ok := ch.hash(n, "")
				want := dns.HashName(n, dns.SHA1, iter, salt)
				if got := base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:]); !ok || got != want {
					t.Errorf("%s %d %q: %s, want %s", n, iter, salt, got, want)
				}
				h, _ = ch.hash(n, "*")
				want = dns.HashName("*."+n, dns.SHA1, iter, salt)
				if n == "." {
					want = dns.HashName("*.", dns.SHA1, iter, salt)
				}
				if got := base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:]); got != want {
					t.Errorf("*.%s: %s, want %s", n, got, want)
				}
			}
		}
	}
}

// testNames: the apex, a name before and after the others, one below an
// empty non-terminal (deep), and one with several types.
var testNames = []Name{
	{Name: "a.example.test.", Types: []uint16{dns.TypeA}},
	{Name: "x.deep.example.test.", Types: []uint16{dns.TypeA, dns.TypeAAAA}},
	{Name: "deep.example.test."},
	{Name: "www.example.test.", Types: []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS}},
	{Name: "example.test.", Types: []uint16{dns.TypeSOA, dns.TypeNS, dns.TypeDNSKEY}},
}

func chain(t *testing.T, s *Signer, d Denial) *Chain {
	t.Helper()
	ch, err := NewChain(s, Config{Denial: d}, testNames, 30)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestCanonKeyOrder(t *testing.T) {
	// RFC 4034 §6.1's example, in order.
	names := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.", "zABC.a.EXAMPLE.", "z.example.", `\001.z.example.`, "*.z.example.", `\200.z.example.`}
	for i := 1; i < len(names); i++ {
		a, _ := canonKey(nil, names[i-1])
		b, _ := canonKey(nil, names[i])
		if string(a) >= string(b) {
			t.Errorf("%s does not sort before %s", names[i-1], names[i])
		}
	}
}

// The NSEC chain links the names in canonical order, skips the empty
// non-terminal, and each record is signed when the chain is built.
func TestChainNSEC(t *testing.T) {
	s := signer(t, 257)
	before := testutil.ToFloat64(s.made)
	ch := chain(t, s, DenialNSEC)
	var got []string
	for i := range ch.links {
		got = append(got, ch.links[i].rr.String())
		if ch.links[i].signed.Load() == nil {
			t.Errorf("%s is not signed", ch.links[i].rr.Header().Name)
		}
	}
	want := []string{
		"example.test.\t30\tIN\tNSEC\ta.example.test. NS SOA RRSIG NSEC DNSKEY",
		"a.example.test.\t30\tIN\tNSEC\tx.deep.example.test. A RRSIG NSEC",
		"x.deep.example.test.\t30\tIN\tNSEC\twww.example.test. A AAAA RRSIG NSEC",
		"www.example.test.\t30\tIN\tNSEC\texample.test. A AAAA RRSIG NSEC HTTPS",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Chain:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if made := testutil.ToFloat64(s.made) - before; made != 4 {
		t.Errorf("dnssec_signatures_total went up by %v, want 4", made)
	}
}

// Deny answers from the chain: the covering NSEC and the one denying the
// wildcard for a name that does not exist, the name's own for a NODATA
// (less the type when the name has it), the one before an empty
// non-terminal; AppendDenial writes the same RRs as bytes.
func TestChainDeny(t *testing.T) {
	s := signer(t, 257)
	for _, d := range []Denial{DenialNSEC, DenialNSEC3} {
		ch := chain(t, s, d)
		for _, tc := range []struct {
			qname  string
			qtype  uint16
			rcode  int
			owners int // NSEC or NSEC3 records; 0: 1 to 3
			wire   bool
		}{
			{"b.example.test.", dns.TypeA, dns.RcodeNameError, 2, true},
			{"zzz.example.test.", dns.TypeA, dns.RcodeNameError, 2, true},
			{"q.x.deep.example.test.", dns.TypeA, dns.RcodeNameError, 0, true}, // NSEC: 1, the next name covers the wildcard too
			{"www.example.test.", dns.TypeTXT, dns.RcodeSuccess, 1, true},
			{"www.example.test.", dns.TypeAAAA, dns.RcodeSuccess, 1, false},
			{"deep.example.test.", dns.TypeA, dns.RcodeSuccess, 1, true},
		} {
			name := fmt.Sprintf("%s/%s_%s", d, tc.qname, dns.TypeToString[tc.qtype])
			t.Run(name, func(t *testing.T) {
				soa := rr(t, "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30")
				m := reply(tc.qname, tc.qtype, dns.RcodeNameError, nil, []dns.RR{soa})
				ch.Deny(m, tc.qname, tc.qtype)
				if m.Rcode != tc.rcode {
					t.Errorf("Rcode %s, want %s", dns.RcodeToString[m.Rcode], dns.RcodeToString[tc.rcode])
				}
				n := 0
				for _, r := range m.Ns {
					switch x := r.(type) {
					case *dns.NSEC:
						n++
						if slices.Contains(x.TypeBitMap, tc.qtype) && strings.EqualFold(x.Hdr.Name, tc.qname) {
							t.Errorf("The NODATA proof names %s: %s", dns.TypeToString[tc.qtype], x)
						}
					case *dns.NSEC3:
						n++
						if slices.Contains(x.TypeBitMap, tc.qtype) {
							h, _ := ch.hash(tc.qname, "")
							if strings.EqualFold(x.Hdr.Name, strings.ToLower(b32.EncodeToString(h[:]))+"."+zone) {
								t.Errorf("The NODATA proof names %s: %s", dns.TypeToString[tc.qtype], x)
							}
						}
					}
				}
				if n != tc.owners && !(tc.owners == 0 && n >= 1 && n <= 3) {
					t.Errorf("%d proof records, want %d:\n%s", n, tc.owners, m)
				}
				soaWire, _ := packAll([]dns.RR{soa})
				b, cnt, rcode, _, ok := ch.AppendDenial(nil, tc.qname, tc.qtype, soaWire, func() *dns.SOA { return soa.(*dns.SOA) })
				if ok != tc.wire {
					t.Fatalf("AppendDenial ok %v, want %v", ok, tc.wire)
				}
				if !ok {
					return
				}
				want, wn := packAll(m.Ns)
				if rcode != m.Rcode || cnt != wn || !bytes.Equal(b, want) {
					t.Errorf("AppendDenial: rcode %d, %d RRs, %d bytes; Deny: rcode %d, %d RRs, %d bytes", rcode, cnt, len(b), m.Rcode, wn, len(want))
				}
			})
		}
	}
}

// A chain's signatures are signed again when they near expiry, on use.
func TestChainRefresh(t *testing.T) {
	s := signer(t, 257)
	s.now = func() time.Time { return time.Now().Add(-7 * 24 * time.Hour) }
	ch := chain(t, s, DenialNSEC)
	old := ch.links[1].signed.Load().sigs[0].(*dns.RRSIG)
	s.now = time.Now
	m := reply("b.example.test.", dns.TypeA, dns.RcodeNameError, nil, []dns.RR{rr(t, "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30")})
	ch.Deny(m, "b.example.test.", dns.TypeA)
	for _, r := range m.Ns {
		if sig, ok := r.(*dns.RRSIG); ok && sig.TypeCovered == dns.TypeNSEC {
			if sig.Signature == old.Signature || time.Until(time.Unix(int64(sig.Expiration), 0)) < 7*24*time.Hour {
				t.Errorf("An old signature was served: %s", sig)
			}
		}
	}
	if e, ok := s.earliestExpiry(); !ok || time.Until(time.Unix(e, 0)) > 25*time.Hour {
		t.Errorf("Earliest expiry %v (%v), want the chain's old signatures, about a day away", time.Unix(e, 0), ok)
	}
}

// AppendDenial allocates nothing for NSEC: a random-name flood costs a
// search. NSEC3 hashes on the stack too.
func TestAppendDenialAllocs(t *testing.T) {
	s := signer(t, 257)
	soa := rr(t, "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30")
	soaWire, _ := packAll([]dns.RR{soa})
	for _, d := range []Denial{DenialNSEC, DenialNSEC3} {
		ch := chain(t, s, d)
		buf := make([]byte, 0, 4096)
		n := testing.AllocsPerRun(200, func() {
			ch.AppendDenial(buf[:0], "random.example.test.", dns.TypeA, soaWire, func() *dns.SOA { return soa.(*dns.SOA) })
		})
		if n != 0 {
			t.Errorf("%s: AppendDenial allocates %.1f times", d, n)
		}
	}
}

func TestDenialMode(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    Denial
		wantErr string
	}{
		{[]string{"nsec"}, DenialNSEC, ""},
		{[]string{"nsec3", "0", "-"}, DenialNSEC3, ""},
		{[]string{"black_lies"}, DenialBlackLies, ""},
		{nil, 0, "want nsec"},
		{[]string{"nsec3", "0", "aa", "x"}, 0, "unexpected argument"},
	} {
		var c Config
		err := ParseDenial(&c, tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.Denial != tc.want {
			t.Errorf("%v: %v %v, want %v", tc.args, c.Denial, err, tc.want)
		}
	}
}
