package sign

import (
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/coredns/coredns/plugin/pkg/cache"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/response"

	"github.com/gslbdns/gslb/internal/ratelog"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Config names a gslb block's keys.
type Config struct {
	// Keys sign answers and are published in the DNSKEY RRset.
	Keys []string
	// Publish keys are in the DNSKEY RRset but sign nothing: a key
	// pre-published for a rollover, or one retired whose signatures
	// resolvers may still cache.
	Publish []string
	// DNSKEYTTL is the DNSKEY RRset's TTL; 0 means 3600.
	DNSKEYTTL uint32
	// Capacity bounds each signature cache (RRsets, and NSECs); 0
	// means 10000.
	Capacity int
	// Denial is how names and types are denied; the NSEC3 parameters
	// are its. None of them changes the Signer: a chain is built per
	// node table (see NewChain).
	Denial          Denial
	NSEC3Iterations uint16
	NSEC3Salt       string // hex; "": none
}

const (
	defaultTTL      = 3600
	defaultCapacity = 10000
	// refreshBefore is how long before expiry a cached signature is
	// replaced.
	refreshBefore = 47 * time.Hour
	// A signature is valid from 3 hours before signing (clock skew) to 8
	// days after, as plugin/dnssec signs.
	validBefore = 3 * time.Hour
	validFor    = 8 * 24 * time.Hour
)

// Signer signs one zone's answers. It is safe for concurrent use.
type Signer struct {
	zone   string
	labels int
	keys   []*key // the signing keys
	// split: with KSKs and ZSKs, the KSKs sign DNSKEY and the ZSKs the
	// rest, as plugin/dnssec does; else every key signs everything.
	split  bool
	dnskey []dns.DNSKEY
	ds     []*dns.DS
	pos    *cache.Cache[*entry] // RRsets but NSEC
	neg    *cache.Cache[*entry] // NSECs: a flood of names evicts only these
	seed1  maphash.Seed
	seed2  maphash.Seed
	now    func() time.Time
	chain  atomic.Pointer[Chain] // the latest built, for the expiry gauge
	made   prometheus.Counter

	hits, misses atomic.Uint64
}

// entry is one cached signing result, checked against a second hash and
// the RR count so that a 64-bit cache key collision is a miss.
type entry struct {
	k2    uint64
	n     int
	until int64 // unix seconds from which the entry is refreshed
	sigs  []dns.RR
}

// registry shares Signers by key file identity, so a reload that keeps
// the keys keeps the signatures. Entries go when no server holds them.
var registry = struct {
	sync.Mutex
	m map[string]weak.Pointer[Signer]
}{m: map[string]weak.Pointer[Signer]{}}

// Load reads the key files of c and returns a Signer for each zone. Every
// key must belong to one of zones and every zone needs a signing key.
func Load(zones []string, c Config) (map[string]*Signer, error) {
	if len(c.Keys) == 0 {
		return nil, errNoKeys
	}
	if c.DNSKEYTTL == 0 {
		c.DNSKEYTTL = defaultTTL
	}
	if c.Capacity <= 0 {
		c.Capacity = defaultCapacity
	}
	type zoneKeys struct{ sign, publish []*key }
	per := map[string]*zoneKeys{}
	for _, z := range zones {
		per[dns.CanonicalName(z)] = &zoneKeys{}
	}
	seen := map[uint16]map[string]string{}
	add := func(files []string, publish bool) error {
		for _, f := range files {
			k, err := loadKey(f)
			if err != nil {
				return err
			}
			owner := dns.CanonicalName(k.pub.Hdr.Name)
			zk, ok := per[owner]
			if !ok {
				return fmt.Errorf("key %s: owner %s is none of the zones %s", k.base, owner, strings.Join(zones, " "))
			}
			pub := k.pub.PublicKey
			if seen[k.tag] == nil {
				seen[k.tag] = map[string]string{}
			}
			if prev, dup := seen[k.tag][owner+pub]; dup {
				return fmt.Errorf("key %s: the same key as %s", k.base, prev)
			}
			seen[k.tag][owner+pub] = k.base
			if publish {
				zk.publish = append(zk.publish, k)
			} else {
				zk.sign = append(zk.sign, k)
			}
		}
		return nil
	}
	if err := add(c.Keys, false); err != nil {
		return nil, err
	}
	if err := add(c.Publish, true); err != nil {
		return nil, err
	}
	out := make(map[string]*Signer, len(per))
	registry.Lock()
	defer registry.Unlock()
	for id, p := range registry.m {
		if p.Value() == nil {
			delete(registry.m, id)
		}
	}
	for zone, zk := range per {
		if len(zk.sign) == 0 {
			return nil, fmt.Errorf("zone %s: no key signs it", zone)
		}
		id := identity(zone, c, zk.sign, zk.publish)
		if s := registry.m[id].Value(); s != nil {
			out[zone] = s
			continue
		}
		s := newSigner(zone, zk.sign, zk.publish, c.DNSKEYTTL, c.Capacity)
		registry.m[id] = weak.Make(s)
		out[zone] = s
	}
	return out, nil
}

func identity(zone string, c Config, signing, publish []*key) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %d", zone, c.DNSKEYTTL, c.Capacity)
	for _, k := range signing {
		b.WriteString(" s")
		b.WriteString(hex.EncodeToString(k.sum[:]))
	}
	for _, k := range publish {
		b.WriteString(" p")
		b.WriteString(hex.EncodeToString(k.sum[:]))
	}
	return b.String()
}

func newSigner(zone string, signing, publish []*key, ttl uint32, capacity int) *Signer {
	ksk, zsk := 0, 0
	for _, k := range signing {
		if k.ksk() {
			ksk++
		} else {
			zsk++
		}
	}
	s := &Signer{
		zone:   zone,
		labels: dns.CountLabel(zone),
		keys:   signing,
		split:  ksk > 0 && zsk > 0,
		pos:    cache.New[*entry](capacity),
		neg:    cache.New[*entry](capacity),
		seed1:  maphash.MakeSeed(),
		seed2:  maphash.MakeSeed(),
		now:    time.Now,
		made:   signatures.WithLabelValues(zone),
	}
	for _, k := range append(append([]*key(nil), signing...), publish...) {
		dk := *k.pub
		dk.Hdr = dns.RR_Header{Name: zone, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: ttl}
		s.dnskey = append(s.dnskey, dk)
		if k.ksk() {
			s.ds = append(s.ds, dk.ToDS(dns.SHA256))
		}
	}
	return s
}

// Zone is the zone s signs.
func (s *Signer) Zone() string { return s.zone }

// DS is the DS RRset of the zone's KSKs (of every key when there is none),
// for the parent zone or a resolver's trust anchor.
func (s *Signer) DS() []*dns.DS {
	if len(s.ds) > 0 {
		return s.ds
	}
	ds := make([]*dns.DS, len(s.dnskey))
	for i := range s.dnskey {
		ds[i] = s.dnskey[i].ToDS(dns.SHA256)
	}
	return ds
}

// Stats are the cache's hits and misses so far; a miss signs.
func (s *Signer) Stats() (hits, misses uint64) { return s.hits.Load(), s.misses.Load() }

// DNSKEY puts the zone's DNSKEY RRset into m, a reply to a DNSKEY query
// for the apex, with its signatures when do (the query's DO bit) is set.
// server, the CoreDNS server's address, is unused since the signing is no
// longer plugin/dnssec's (it labelled that plugin's cache metrics); it
// stays so that callers need not change.
func (s *Signer) DNSKEY(m *dns.Msg, do bool, server string) {
	for i := range s.dnskey {
		k := s.dnskey[i]
		m.Answer = append(m.Answer, &k)
	}
	if do {
		m.Answer = s.section(m.Answer, s.now())
	}
}

// Sign adds RRSIGs to m, a reply of s's zone to a query with the DO bit.
// A negative answer (NXDOMAIN or NODATA, with the SOA alone in the
// authority section) becomes a NODATA proven by an NSEC black lie. m's own
// RRs are not changed; what Sign adds is m's own copy. The OPT record is
// left as it is. server is unused, as for DNSKEY.
func (s *Signer) Sign(m *dns.Msg, server string) {
	now := s.now()
	mt, _ := response.Typify(m, now)
	switch mt {
	case response.NoError:
		m.Answer = s.section(m.Answer, now)
		m.Ns = s.section(m.Ns, now)
		m.Extra = s.section(m.Extra, now)
	case response.NameError, response.NoData:
		s.deny(m, now)
	}
}

// section appends the signatures of each RRset of rrs in s's zone.
func (s *Signer) section(rrs []dns.RR, now time.Time) []dns.RR {
	n := len(rrs)
	for i := 0; i < n; i++ {
		h := rrs[i].Header()
		if h.Rrtype == dns.TypeRRSIG || h.Rrtype == dns.TypeOPT || !s.inZone(h.Name) {
			continue
		}
		first := true
		for j := range i {
			if sameSet(rrs[j].Header(), h) {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		c := s.pos
		if h.Rrtype == dns.TypeNSEC {
			c = s.neg
		}
		for _, sig := range s.rrsetSigs(c, rrs[:n], i, now) {
			rrs = append(rrs, clone(sig))
		}
	}
	return rrs
}

// inZone is dns.IsSubDomain(s.zone, name) without its allocations.
func (s *Signer) inZone(name string) bool {
	if s.labels == 0 {
		return true
	}
	if dns.CountLabel(name) < s.labels {
		return false
	}
	i, _ := dns.PrevLabel(name, s.labels)
	return strings.EqualFold(name[i:], s.zone)
}

func sameSet(a, b *dns.RR_Header) bool {
	return a.Rrtype == b.Rrtype && a.Class == b.Class && strings.EqualFold(a.Name, b.Name)
}

// rrsetSigs returns the signatures of the RRset rrs[i] starts, from the
// cache or signed now.
func (s *Signer) rrsetSigs(c *cache.Cache[*entry], rrs []dns.RR, i int, now time.Time) []dns.RR {
	h := rrs[i].Header()
	var k1, k2 uint64
	n := 0
	ok := true
	bp := bufPool.Get().(*[]byte)
	for _, rr := range rrs[i:] {
		if !sameSet(rr.Header(), h) {
			continue
		}
		w, err := wire(rr, bp)
		if err != nil {
			ok = false
			break
		}
		// A sum is independent of the RRs' order, as the RRset is.
		k1 += maphash.Bytes(s.seed1, w)
		k2 += maphash.Bytes(s.seed2, w)
		n++
	}
	bufPool.Put(bp)
	if ok {
		if e, hit := c.Get(k1); hit && e.k2 == k2 && e.n == n && now.Unix() < e.until {
			s.hits.Add(1)
			return e.sigs
		}
	}
	s.misses.Add(1)
	set := make([]dns.RR, 0, n+2)
	for _, rr := range rrs[i:] {
		if sameSet(rr.Header(), h) {
			set = append(set, rr)
		}
	}
	sigs := s.signSet(set, now)
	if len(sigs) == 0 {
		if ok, _ := failed.Allow(time.Minute); ok {
			log.Warningf("Cannot sign %s %s in %s: answers for it will not validate", h.Name, dns.TypeToString[h.Rrtype], s.zone)
		}
	}
	if ok && len(sigs) > 0 {
		c.Add(k1, &entry{k2: k2, n: n, until: until(sigs), sigs: sigs})
	}
	return sigs
}

// signSet signs the RRset set with each key that signs its type. It is
// plugin/dnssec's signing (the same RRSIG fields, keys and validity) but
// for the original TTL: plugin/dnssec fixes it at 3600, and a validating
// resolver caps an RRset's TTL at its signature's original TTL, so a
// record with a longer ttl would be cached shorter. Here it is the RRset's
// TTL; a set with another TTL is another cache entry (the key covers it).
func (s *Signer) signSet(set []dns.RR, now time.Time) []dns.RR {
	h := set[0].Header()
	dnskey := h.Rrtype == dns.TypeDNSKEY
	incep, expir := uint32(now.Add(-validBefore).Unix()), uint32(now.Add(validFor).Unix()) // #nosec G115 -- the RRSIG's serial arithmetic
	sigs := make([]dns.RR, 0, len(s.keys))
	for _, k := range s.keys {
		if s.split && k.ksk() != dnskey {
			continue
		}
		sig := &dns.RRSIG{
			Hdr:       dns.RR_Header{Rrtype: dns.TypeRRSIG, Ttl: h.Ttl},
			Algorithm: k.pub.Algorithm, KeyTag: k.tag, SignerName: s.zone,
			OrigTtl: h.Ttl, Inception: incep, Expiration: expir,
		}
		if err := sig.Sign(k.priv, set); err != nil {
			return nil
		}
		sigs = append(sigs, sig)
		s.made.Inc()
	}
	return sigs
}

// deny turns a negative answer into a NODATA proven by an NSEC black
// lie, as plugin/dnssec does: the NSEC's owner is the query name, the next
// name its immediate successor, so it covers no other name.
func (s *Signer) deny(m *dns.Msg, now time.Time) {
	if len(m.Question) == 0 || len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA {
		return
	}
	q := m.Question[0]
	nsec := &dns.NSEC{
		Hdr:        dns.RR_Header{Name: q.Name, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: m.Ns[0].Header().Ttl},
		NextDomain: `\000.` + q.Name,
		TypeBitMap: bitmap(q.Qtype, strings.EqualFold(q.Name, s.zone)),
	}
	if q.Name == "." {
		nsec.NextDomain = `\000.`
	}
	m.Rcode = dns.RcodeSuccess
	if q.Qtype == dns.TypeNSEC { // the NSEC is the answer
		m.Ns = nil
		m.Answer = s.section(append(m.Answer, nsec), now)
		return
	}
	m.Ns = s.section(append(m.Ns, nsec), now)
}

// The NSEC bitmaps are plugin/dnssec's with HTTPS and SVCB added: a
// resolver that keeps an NSEC answers NODATA from it for every type it
// does not name, and gslb answers HTTPS.
var (
	// In ascending order, as the wire form needs.
	zoneTypes = []uint16{dns.TypeA, dns.TypeHINFO, dns.TypeTXT, dns.TypeAAAA, dns.TypeLOC, dns.TypeSRV, dns.TypeCERT, dns.TypeSSHFP,
		dns.TypeRRSIG, dns.TypeNSEC, dns.TypeTLSA, dns.TypeHIP, dns.TypeOPENPGPKEY, dns.TypeSVCB, dns.TypeHTTPS, dns.TypeSPF}
	apexTypes = []uint16{dns.TypeA, dns.TypeNS, dns.TypeSOA, dns.TypeHINFO, dns.TypeMX, dns.TypeTXT, dns.TypeAAAA, dns.TypeLOC,
		dns.TypeSRV, dns.TypeCERT, dns.TypeSSHFP, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeDNSKEY, dns.TypeTLSA, dns.TypeHIP,
		dns.TypeOPENPGPKEY, dns.TypeSVCB, dns.TypeHTTPS, dns.TypeSPF}
	// without[apex][qtype] is the bitmap less qtype, made once.
	without = [2]map[uint16][]uint16{minus(zoneTypes), minus(apexTypes)}
)

func minus(types []uint16) map[uint16][]uint16 {
	m := map[uint16][]uint16{}
	for i, t := range types {
		if t == dns.TypeNSEC || t == dns.TypeRRSIG {
			continue
		}
		m[t] = append(append([]uint16(nil), types[:i]...), types[i+1:]...)
	}
	return m
}

// bitmap is the NSEC type bitmap denying qtype. A DS query gets the same
// as any other: gslb delegates nothing, and plugin/dnssec's delegation
// bitmap (NS without SOA) would prove an insecure delegation.
func bitmap(qtype uint16, apex bool) []uint16 {
	i, all := 0, zoneTypes
	if apex {
		i, all = 1, apexTypes
	}
	if b, ok := without[i][qtype]; ok {
		return b
	}
	return all
}

// until is when signatures sigs are to be refreshed.
func until(sigs []dns.RR) int64 {
	u := int64(1<<63 - 1)
	for _, rr := range sigs {
		if sig, ok := rr.(*dns.RRSIG); ok {
			u = min(u, int64(sig.Expiration)-int64(refreshBefore/time.Second))
		}
	}
	return u
}

// clone is a reply's own copy of a cached RR: the cache plugin after us
// rewrites TTLs in place. Its strings and the NSEC bitmap are shared:
// nothing writes them.
func clone(rr dns.RR) dns.RR {
	switch r := rr.(type) {
	case *dns.RRSIG:
		c := *r
		return &c
	case *dns.NSEC:
		c := *r
		return &c
	}
	return dns.Copy(rr)
}

var log = clog.NewWithPlugin("gslb")

// failed bounds the warnings of signing failures, which repeat per query.
var failed ratelog.Limit

var bufPool = sync.Pool{New: func() any { b := make([]byte, 1024); return &b }}

// wire packs rr uncompressed into *bp, growing it for a large RR.
func wire(rr dns.RR, bp *[]byte) ([]byte, error) {
	off, err := dns.PackRR(rr, *bp, 0, nil, false)
	if errors.Is(err, dns.ErrBuf) {
		*bp = make([]byte, dns.MaxMsgSize)
		off, err = dns.PackRR(rr, *bp, 0, nil, false)
	}
	if err != nil {
		return nil, err
	}
	return (*bp)[:off], nil
}
