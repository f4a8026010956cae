package sign

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestSignPositive(t *testing.T) {
	csk := signer(t, 257)
	split := signer(t, 257, 256)
	for _, s := range []*Signer{csk, split} {
		ksk, zsk := tags(s)
		if len(zsk) == 0 {
			zsk = ksk // a CSK signs everything
		}
		all := func(types ...uint16) map[uint16][]uint16 {
			w := map[uint16][]uint16{}
			for _, typ := range types {
				w[typ] = zsk
			}
			return w
		}
		tests := []struct {
			name   string
			qname  string
			qtype  uint16
			answer []string
			ns     []string
		}{
			{"A", "www.example.test.", dns.TypeA, []string{"www.example.test. 30 IN A 192.0.2.1", "www.example.test. 30 IN A 192.0.2.2"}, nil},
			{"AAAA", "www.example.test.", dns.TypeAAAA, []string{"www.example.test. 30 IN AAAA 2001:db8::1"}, nil},
			{"CNAME", "cdn.example.test.", dns.TypeA, []string{"cdn.example.test. 30 IN CNAME edge.vendor-cdn.example."}, nil},
			{"HTTPS", "www.example.test.", dns.TypeHTTPS, []string{`www.example.test. 30 IN HTTPS 1 . alpn="h2,h3" port=443 ipv4hint=192.0.2.1 ipv6hint=2001:db8::1`}, nil},
			{"SOA", "example.test.", dns.TypeSOA, []string{"example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30"},
				[]string{"example.test. 30 IN NS ns1.example.test.", "example.test. 30 IN NS ns2.example.test."}},
			{"NS", "example.test.", dns.TypeNS, []string{"example.test. 30 IN NS ns1.example.test.", "example.test. 30 IN NS ns2.example.test."}, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var answer, ns []dns.RR
				for _, a := range tc.answer {
					answer = append(answer, rr(t, a))
				}
				for _, a := range tc.ns {
					ns = append(ns, rr(t, a))
				}
				orig := make([]string, len(answer))
				for i := range answer {
					orig[i] = answer[i].String()
				}
				m := reply(tc.qname, tc.qtype, dns.RcodeSuccess, answer, ns)
				s.Sign(m, "")
				types := []uint16{answer[0].Header().Rrtype}
				if ns != nil {
					types = append(types, dns.TypeNS)
				}
				verify(t, s, m, all(types...))
				if len(m.Answer) != len(answer)+len(zsk) {
					t.Errorf("Answer has %d RRs, want %d RRs and %d RRSIGs", len(m.Answer), len(answer), len(zsk))
				}
				for i := range answer {
					if answer[i].String() != orig[i] {
						t.Errorf("Sign changed the reply's RR %s to %s", orig[i], answer[i])
					}
				}
				if m.Rcode != dns.RcodeSuccess || m.IsEdns0() == nil || len(m.Extra) != 1 {
					t.Errorf("Sign changed rcode %d or the OPT %v", m.Rcode, m.Extra)
				}
			})
		}
	}
}

func TestSignOutOfZone(t *testing.T) {
	s := signer(t, 257)
	m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess,
		[]dns.RR{rr(t, "www.example.test. 30 IN CNAME edge.vendor.example."), rr(t, "edge.vendor.example. 30 IN A 192.0.2.9")}, nil)
	s.Sign(m, "")
	if len(m.Answer) != 3 {
		t.Fatalf("Want the CNAME signed and the vendor's A not, got %v", m.Answer)
	}
	if sig := m.Answer[2].(*dns.RRSIG); sig.TypeCovered != dns.TypeCNAME {
		t.Errorf("Signed %s, want CNAME", dns.TypeToString[sig.TypeCovered])
	}
}

func TestSignNegative(t *testing.T) {
	s := signer(t, 257, 256)
	_, zsk := tags(s)
	soa := "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30"
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		apex   bool
		absent uint16
	}{
		{"NXDOMAIN", "nope.example.test.", dns.TypeA, dns.RcodeNameError, false, dns.TypeA},
		{"NODATA", "www.example.test.", dns.TypeAAAA, dns.RcodeSuccess, false, dns.TypeAAAA},
		{"NODATA HTTPS", "www.example.test.", dns.TypeHTTPS, dns.RcodeSuccess, false, dns.TypeHTTPS},
		{"NODATA apex", "example.test.", dns.TypeMX, dns.RcodeSuccess, true, dns.TypeMX},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := reply(tc.qname, tc.qtype, tc.rcode, nil, []dns.RR{rr(t, soa)})
			s.Sign(m, "")
			if m.Rcode != dns.RcodeSuccess {
				t.Errorf("Rcode %s, want NOERROR (black lies)", dns.RcodeToString[m.Rcode])
			}
			if len(m.Answer) != 0 {
				t.Errorf("Answer %v, want none", m.Answer)
			}
			verify(t, s, m, map[uint16][]uint16{dns.TypeSOA: zsk, dns.TypeNSEC: zsk})
			var nsec *dns.NSEC
			for _, r := range m.Ns {
				if n, ok := r.(*dns.NSEC); ok {
					nsec = n
				}
			}
			if nsec == nil {
				t.Fatalf("No NSEC in %v", m.Ns)
			}
			if nsec.Hdr.Name != tc.qname || nsec.NextDomain != `\000.`+tc.qname {
				t.Errorf("NSEC %s, want owner %s and next \\000.%s", nsec, tc.qname, tc.qname)
			}
			if slices.Contains(nsec.TypeBitMap, tc.absent) || slices.Contains(nsec.TypeBitMap, dns.TypeCNAME) {
				t.Errorf("NSEC bitmap %v names %s or CNAME: it proves nothing", nsec.TypeBitMap, dns.TypeToString[tc.absent])
			}
			if got := slices.Contains(nsec.TypeBitMap, dns.TypeSOA); got != tc.apex {
				t.Errorf("NSEC bitmap has SOA %v, want %v (apex)", got, tc.apex)
			}
		})
	}
}

func TestDNSKEY(t *testing.T) {
	s := signer(t, 257, 256)
	ksk, _ := tags(s)
	m := reply(zone, dns.TypeDNSKEY, dns.RcodeSuccess, nil, nil)
	s.DNSKEY(m, true, "")
	if n := len(m.Answer); n != 3 {
		t.Fatalf("Answer has %d RRs, want 2 DNSKEYs and the KSK's RRSIG: %v", n, m.Answer)
	}
	verify(t, s, m, map[uint16][]uint16{dns.TypeDNSKEY: ksk})

	m = reply(zone, dns.TypeDNSKEY, dns.RcodeSuccess, nil, nil)
	s.DNSKEY(m, false, "")
	if n := len(m.Answer); n != 2 {
		t.Errorf("Without DO, answer has %d RRs, want the 2 DNSKEYs", n)
	}
	if ds := s.DS(); len(ds) != 1 || ds[0].KeyTag != ksk[0] {
		t.Errorf("DS %v, want the KSK's", ds)
	}
}

// An answer whose RRsets were signed before costs no signing: the same
// signature comes back (ECDSA signatures differ each time they are made).
func TestCacheHit(t *testing.T) {
	s := signer(t, 257)
	a := func(ttl string, ips ...string) *dns.Msg {
		var rrs []dns.RR
		for _, ip := range ips {
			rrs = append(rrs, rr(t, "www.example.test. "+ttl+" IN A "+ip))
		}
		return reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, rrs, nil)
	}
	sig := func(m *dns.Msg) string { return m.Answer[len(m.Answer)-1].(*dns.RRSIG).Signature }

	first := a("30", "192.0.2.1", "192.0.2.2")
	s.Sign(first, "")
	steps := []struct {
		name   string
		m      *dns.Msg
		resign bool
	}{
		{"same", a("30", "192.0.2.1", "192.0.2.2"), false},
		{"other order", a("30", "192.0.2.2", "192.0.2.1"), false},
		{"other TTL", a("60", "192.0.2.1", "192.0.2.2"), true},
		{"other RDATA", a("30", "192.0.2.1", "192.0.2.3"), true},
		{"subset", a("30", "192.0.2.1"), true},
	}
	for _, st := range steps {
		_, before := s.Stats()
		s.Sign(st.m, "")
		verify(t, s, st.m, map[uint16][]uint16{dns.TypeA: {s.dnskey[0].KeyTag()}})
		_, after := s.Stats()
		if resigned := after != before; resigned != st.resign {
			t.Errorf("%s: signed again %v, want %v", st.name, resigned, st.resign)
		}
		if same := sig(st.m) == sig(first); same == st.resign {
			t.Errorf("%s: same signature as the first %v, want %v", st.name, same, !st.resign)
		}
	}

	// Denials are cached too.
	soa := "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30"
	n1 := reply("nope.example.test.", dns.TypeA, dns.RcodeNameError, nil, []dns.RR{rr(t, soa)})
	s.Sign(n1, "")
	_, before := s.Stats()
	n2 := reply("nope.example.test.", dns.TypeA, dns.RcodeNameError, nil, []dns.RR{rr(t, soa)})
	s.Sign(n2, "")
	if _, after := s.Stats(); after != before {
		t.Errorf("A repeated NXDOMAIN was signed again")
	}
	if len(n2.Ns) != len(n1.Ns) || n2.Rcode != dns.RcodeSuccess {
		t.Errorf("Cached denial %v differs from the first %v", n2, n1)
	}

	// What a reply holds is its own: the cache plugin rewrites TTLs.
	first.Answer[len(first.Answer)-1].Header().Ttl = 1
	m := a("30", "192.0.2.1", "192.0.2.2")
	s.Sign(m, "")
	if ttl := m.Answer[len(m.Answer)-1].Header().Ttl; ttl != 30 {
		t.Errorf("A change to one reply's RRSIG reached the cache: TTL %d", ttl)
	}
}

// Signatures near their expiry are made again, and then cached again.
func TestRefresh(t *testing.T) {
	s := signer(t, 257)
	s.now = func() time.Time { return time.Now().Add(-7 * 24 * time.Hour) }
	old := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A 192.0.2.1")}, nil)
	s.Sign(old, "")
	oldSig := old.Answer[1].(*dns.RRSIG)
	if left := time.Until(time.Unix(int64(oldSig.Expiration), 0)); left > 25*time.Hour {
		t.Fatalf("Test setup: the old signature has %v left", left)
	}

	s.now = time.Now
	for i := range 2 {
		m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A 192.0.2.1")}, nil)
		s.Sign(m, "")
		verify(t, s, m, map[uint16][]uint16{dns.TypeA: {s.dnskey[0].KeyTag()}})
		sig := m.Answer[1].(*dns.RRSIG)
		if left := time.Until(time.Unix(int64(sig.Expiration), 0)); left < 7*24*time.Hour {
			t.Errorf("Query %d: signature has %v left, want a refreshed one (8 days)", i, left)
		}
		if sig.Signature == oldSig.Signature {
			t.Errorf("Query %d: the old signature was served", i)
		}
	}
	if hits, misses := s.Stats(); hits != 1 || misses != 2 {
		t.Errorf("Hits %d misses %d, want 1 and 2: sign, refresh, then cached", hits, misses)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	ksk := writeKey(t, dir, zone, 257)
	zsk := writeKey(t, dir, zone, 256)
	next := writeKey(t, dir, zone, 256)

	a, err := Load([]string{"Example.Test"}, Config{Keys: []string{ksk + ".key", zsk + ".private"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load([]string{zone}, Config{Keys: []string{ksk, zsk}})
	if err != nil {
		t.Fatal(err)
	}
	if a[zone] == nil || a[zone] != b[zone] {
		t.Errorf("The same key files gave two Signers: a reload would sign again")
	}
	c, err := Load([]string{zone}, Config{Keys: []string{ksk, zsk}, Publish: []string{next}})
	if err != nil {
		t.Fatal(err)
	}
	if c[zone] == a[zone] {
		t.Errorf("A pre-published key did not make a new Signer")
	}
	if n := len(c[zone].dnskey); n != 3 {
		t.Errorf("DNSKEY RRset has %d keys, want 3 with the pre-published one", n)
	}
	m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A 192.0.2.1")}, nil)
	c[zone].Sign(m, "")
	_, zsks := tags(b[zone])
	verify(t, c[zone], m, map[uint16][]uint16{dns.TypeA: zsks})

	// A key file that changes is a new key: a new Signer.
	again := writeKey(t, t.TempDir(), zone, 257)
	for _, ext := range []string{".key", ".private"} {
		data, err := os.ReadFile(again + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ksk+ext, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Load([]string{zone}, Config{Keys: []string{ksk, zsk}})
	if err != nil {
		t.Fatal(err)
	}
	if d[zone] == a[zone] {
		t.Errorf("A changed key file kept the old Signer")
	}

	big := filepath.Join(dir, "Kbig")
	if err := os.WriteFile(big+".key", []byte(strings.Repeat(";\n", maxKeyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big+".private", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other := writeKey(t, dir, "other.test.", 257)
	nonzone := writeKey(t, dir, zone, 0)
	bad := filepath.Join(dir, "Kbad")
	if err := os.WriteFile(bad+".key", []byte("example.test. IN DNSKEY 257 3 13 !!!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad+".private", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	errs := []struct {
		name  string
		zones []string
		c     Config
		want  string
	}{
		{"no keys", []string{zone}, Config{}, "no key files"},
		{"missing file", []string{zone}, Config{Keys: []string{filepath.Join(dir, "Knone")}}, "Knone.key"},
		{"too large", []string{zone}, Config{Keys: []string{big}}, "Kbig.key: larger than"},
		{"bad key", []string{zone}, Config{Keys: []string{bad}}, "Kbad"},
		{"other zone", []string{zone}, Config{Keys: []string{other}}, "owner other.test. is none of the zones"},
		{"zone without key", []string{zone, "other.test."}, Config{Keys: []string{zsk}}, "zone other.test.: no key signs it"},
		{"not a zone key", []string{zone}, Config{Keys: []string{nonzone}}, "not a zone key"},
		{"twice", []string{zone}, Config{Keys: []string{zsk}, Publish: []string{zsk}}, "the same key"},
		{"publish only", []string{zone}, Config{Keys: []string{other}, Publish: []string{zsk}}, "none of the zones"},
	}
	for _, tc := range errs {
		_, err := Load(tc.zones, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	s := signer(t, 257, 256)
	_, zsk := tags(s)
	soa := "example.test. 30 IN SOA ns1.example.test. hostmaster.example.test. 1 7200 1800 1209600 30"
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				ip := []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}[(g+i)%3]
				m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A "+ip)}, nil)
				s.Sign(m, "")
				verify(t, s, m, map[uint16][]uint16{dns.TypeA: zsk})
				n := reply("nope.example.test.", dns.TypeAAAA, dns.RcodeNameError, nil, []dns.RR{rr(t, soa)})
				s.Sign(n, "")
				verify(t, s, n, map[uint16][]uint16{dns.TypeSOA: zsk, dns.TypeNSEC: zsk})
				if _, err := m.Pack(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if _, misses := s.Stats(); misses > 4*8 {
		t.Errorf("%d misses for 4 distinct RRsets", misses)
	}
}

// A cached signature costs the reply's copy of the RRSIG and nothing else.
func TestCacheHitAllocs(t *testing.T) {
	s := signer(t, 257)
	a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: []byte{192, 0, 2, 1}}
	m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, nil, nil)
	answer := make([]dns.RR, 1, 4)
	answer[0] = a
	m.Answer = answer
	s.Sign(m, "")
	allocs := testing.AllocsPerRun(100, func() {
		m.Answer = answer[:1]
		s.Sign(m, "")
	})
	if allocs > 1 {
		t.Errorf("%v allocations per cached answer, want 1 (the RRSIG copy)", allocs)
	}
}

func TestInZone(t *testing.T) {
	s := &Signer{zone: zone, labels: dns.CountLabel(zone)}
	root := &Signer{zone: ".", labels: 0}
	for _, name := range []string{"example.test.", "EXAMPLE.test.", "www.example.test.", "a.b.example.test.", "xexample.test.", "test.", "example.test.x.", "www.other.test.", `a\.example.test.`, "."} {
		if got, want := s.inZone(name), dns.IsSubDomain(zone, name); got != want {
			t.Errorf("inZone(%q) = %v, want %v", name, got, want)
		}
		if !root.inZone(name) {
			t.Errorf("%q not in the root zone", name)
		}
	}
}

func TestBitmaps(t *testing.T) {
	for _, apex := range []bool{false, true} {
		for _, q := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS, dns.TypeDS, dns.TypeNSEC, dns.TypeMX, dns.TypeSOA} {
			b := bitmap(q, apex)
			if !slices.IsSorted(b) {
				t.Errorf("Bitmap for %s (apex %v) is not in order: %v", dns.TypeToString[q], apex, b)
			}
			if q != dns.TypeNSEC && slices.Contains(b, q) {
				t.Errorf("Bitmap denying %s names it", dns.TypeToString[q])
			}
			for _, must := range []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeHTTPS, dns.TypeA, dns.TypeAAAA} {
				if must != q && !slices.Contains(b, must) {
					t.Errorf("Bitmap denying %s (apex %v) lacks %s", dns.TypeToString[q], apex, dns.TypeToString[must])
				}
			}
			if slices.Contains(b, dns.TypeCNAME) || slices.Contains(b, dns.TypeDS) || slices.Contains(b, dns.TypeNS) != apex {
				t.Errorf("Bitmap %v (apex %v): CNAME, DS, or NS off the apex", b, apex)
			}
		}
	}
}

// An RRset that cannot be signed is left unsigned and not cached.
func TestSignFailure(t *testing.T) {
	s := signer(t, 257)
	bad := &dns.NSEC{Hdr: dns.RR_Header{Name: "x.example.test.", Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: 30},
		NextDomain: `\000.x.example.test.`, TypeBitMap: []uint16{dns.TypeAAAA, dns.TypeA}} // out of order: no wire form
	for range 2 {
		m := reply("x.example.test.", dns.TypeNSEC, dns.RcodeSuccess, []dns.RR{bad, rr(t, "x.example.test. 30 IN A 192.0.2.1")}, nil)
		s.Sign(m, "")
		if len(m.Answer) != 3 {
			t.Fatalf("Want the NSEC unsigned and the A signed: %v", m.Answer)
		}
	}
	if hits, misses := s.Stats(); hits != 1 || misses != 3 {
		t.Errorf("Hits %d misses %d, want 1 (the A) and 3 (the NSEC twice)", hits, misses)
	}
}

// The other algorithms plugin/dnssec reads sign as well.
func TestAlgorithms(t *testing.T) {
	for _, a := range []struct {
		alg  uint8
		bits int
	}{{dns.ECDSAP384SHA384, 384}, {dns.ED25519, 256}, {dns.RSASHA256, 2048}} {
		t.Run(dns.AlgorithmToString[a.alg], func(t *testing.T) {
			base := writeKeyAlg(t, t.TempDir(), zone, 257, a.alg, a.bits)
			ss, err := Load([]string{zone}, Config{Keys: []string{base}})
			if err != nil {
				t.Fatal(err)
			}
			s := ss[zone]
			m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A 192.0.2.1")}, nil)
			s.Sign(m, "")
			verify(t, s, m, map[uint16][]uint16{dns.TypeA: {s.dnskey[0].KeyTag()}})
		})
	}
}

// A Signer no server holds any longer is let go.
func TestRegistryForgets(t *testing.T) {
	base := writeKey(t, t.TempDir(), zone, 257)
	if _, err := Load([]string{zone}, Config{Keys: []string{base}}); err != nil { // held by nobody
		t.Fatal(err)
	}
	runtime.GC()
	if _, err := Load([]string{zone}, Config{Keys: []string{writeKey(t, t.TempDir(), zone, 257)}}); err != nil {
		t.Fatal(err)
	}
	registry.Lock()
	defer registry.Unlock()
	for id, p := range registry.m {
		if strings.Contains(id, zone) && p.Value() == nil {
			t.Errorf("The registry keeps a collected Signer: %s", id)
		}
	}
}

// The RRSIG's original TTL is the RRset's, also above an hour, and the
// same RRset under another TTL (an adaptive ttl's MAX and MIN) gets its
// own signature, cached like the first.
func TestOrigTTL(t *testing.T) {
	s := signer(t, 257)
	a := func(ttl uint32) *dns.Msg {
		m := reply("www.example.test.", dns.TypeA, dns.RcodeSuccess, []dns.RR{rr(t, "www.example.test. 30 IN A 192.0.2.1")}, nil)
		m.Answer[0].Header().Ttl = ttl
		return m
	}
	want := map[uint16][]uint16{dns.TypeA: {s.dnskey[0].KeyTag()}}
	for _, ttl := range []uint32{7200, 60, 86400} {
		m := a(ttl)
		s.Sign(m, "")
		sig := verify(t, s, m, want)[dns.TypeA][0]
		if sig.OrigTtl != ttl || sig.Hdr.Ttl != ttl {
			t.Errorf("TTL %d: RRSIG original TTL %d, TTL %d", ttl, sig.OrigTtl, sig.Hdr.Ttl)
		}
	}
	_, misses := s.Stats()
	for _, ttl := range []uint32{60, 7200, 60, 86400} {
		m := a(ttl)
		s.Sign(m, "")
		verify(t, s, m, want)
	}
	if _, after := s.Stats(); after != misses {
		t.Errorf("%d signings for TTLs signed before, want none", after-misses)
	}
}
