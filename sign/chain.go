package sign

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Name is one name of a zone with the types it holds; none for an empty
// non-terminal.
type Name struct {
	Name  string // lower case, fully qualified
	Types []uint16
}

// Chain is a zone's denial of existence built once for a set of names: an
// NSEC or NSEC3 chain whose records are signed when it is built, so that
// a query for a name that does not exist costs a search, not a signature.
// It is immutable but for the signatures, refreshed when they near expiry.
type Chain struct {
	s         *Signer
	nsec3     bool
	links     []link         // by canonical order (NSEC) or hash (NSEC3)
	names     map[string]int // a name that exists, its link (NSEC3: ENTs too)
	ents      map[string]bool
	iter      uint16
	salt      string
	saltRaw   []byte
	param     *dns.NSEC3PARAM
	paramLink link                      // the NSEC3PARAM and its signatures, as a link's
	soa       atomic.Pointer[soaSigned] // the wire path's last SOA
}

// link is one NSEC or NSEC3 record of a chain.
type link struct {
	key   []byte // canonKey of the owner (NSEC), the raw hash (NSEC3)
	rr    dns.RR
	types []uint16 // the data types of the owner
	// less[i] is rr without types[i]: the proof of a NODATA for it,
	// signed through the NSEC cache when asked.
	less   []dns.RR
	signed atomic.Pointer[signed]
}

type signed struct {
	sigs  []dns.RR
	until int64
	wire  []byte // the record and its signatures packed, uncompressed
	n     int    // how many RRs wire holds
}

// maxNames bounds a chain: each name costs a signature at every build.
const maxNames = 1 << 20

// NewChain builds and signs the denial of s's zone, whose names are names
// (the apex among them), for mode DenialNSEC or DenialNSEC3 of c. ttl is
// the records' TTL, the zone's negative TTL (RFC 9077).
func NewChain(s *Signer, c Config, names []Name, ttl uint32) (*Chain, error) {
	if len(names) > maxNames {
		return nil, fmt.Errorf("zone %s: %d names, more than a chain holds (%d); use denial black_lies", s.zone, len(names), maxNames)
	}
	ch := &Chain{s: s, nsec3: c.Denial == DenialNSEC3, names: make(map[string]int, len(names)), ents: map[string]bool{},
		iter: c.NSEC3Iterations, salt: c.NSEC3Salt}
	apex := false
	for _, n := range names {
		if !s.inZone(n.Name) {
			return nil, fmt.Errorf("zone %s: name %s is outside it", s.zone, n.Name)
		}
		apex = apex || n.Name == s.zone
	}
	if !apex {
		names = append(names, Name{Name: s.zone})
	}
	var err error
	if ch.nsec3 {
		err = ch.buildNSEC3(names, ttl)
	} else {
		err = ch.buildNSEC(names, ttl)
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	for i := range ch.links {
		ch.sigsOf(&ch.links[i], now)
	}
	if ch.param != nil {
		ch.sigsOf(&ch.paramLink, now)
	}
	s.chain.Store(ch)
	return ch, nil
}

func (ch *Chain) buildNSEC(names []Name, ttl uint32) error {
	for _, n := range names {
		if len(n.Types) == 0 && n.Name != ch.s.zone {
			ch.ents[n.Name] = true // no NSEC of its own: the one before it proves it
			continue
		}
		k, ok := canonKey(nil, n.Name)
		if !ok {
			return fmt.Errorf("zone %s: name %q does not pack", ch.s.zone, n.Name)
		}
		ch.links = append(ch.links, link{key: k, types: n.Types})
		ch.links[len(ch.links)-1].rr = &dns.NSEC{Hdr: dns.RR_Header{Name: n.Name, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: ttl}}
	}
	sort.Slice(ch.links, func(i, j int) bool { return bytes.Compare(ch.links[i].key, ch.links[j].key) < 0 })
	for i := range ch.links {
		l := &ch.links[i]
		nsec := l.rr.(*dns.NSEC)
		if i > 0 && bytes.Equal(l.key, ch.links[i-1].key) {
			return fmt.Errorf("zone %s: name %s twice", ch.s.zone, nsec.Hdr.Name)
		}
		nsec.NextDomain = ch.links[(i+1)%len(ch.links)].rr.Header().Name
		nsec.TypeBitMap = typeBitmap(l.types, dns.TypeRRSIG, dns.TypeNSEC)
		ch.names[nsec.Hdr.Name] = i
		for _, t := range l.types {
			v := *nsec
			v.TypeBitMap = minusType(nsec.TypeBitMap, t)
			l.less = append(l.less, &v)
		}
	}
	return nil
}

// typeBitmap is types with extra, sorted and without duplicates.
func typeBitmap(types []uint16, extra ...uint16) []uint16 {
	b := append(slices.Clone(types), extra...)
	slices.Sort(b)
	return slices.Compact(b)
}

func minusType(types []uint16, t uint16) []uint16 {
	return slices.DeleteFunc(slices.Clone(types), func(x uint16) bool { return x == t })
}

// canonKey appends to b the key of name whose byte order is the canonical
// order of RFC 4034 §6.1: its labels from the right, each octet lower-cased
// and written as 1 and the octet, each label ended by a 0, so that a label
// sorts before the longer labels it starts.
func canonKey(b []byte, name string) ([]byte, bool) {
	var w [256]byte
	end, err := dns.PackDomainName(name, w[:], 0, nil, false)
	if err != nil || end == 0 {
		return b, false
	}
	var starts [128]uint8
	n := 0
	for i := 0; i < end && w[i] != 0 && n < len(starts); i += int(w[i]) + 1 {
		starts[n] = uint8(i)
		n++
	}
	for j := n - 1; j >= 0; j-- {
		s := int(starts[j])
		for _, o := range w[s+1 : s+1+int(w[s])] {
			if 'A' <= o && o <= 'Z' {
				o += 'a' - 'A'
			}
			b = append(b, 1, o)
		}
		b = append(b, 0)
	}
	return b, true
}

// sigsOf is l's signatures, signed again once they near expiry.
func (ch *Chain) sigsOf(l *link, now time.Time) []dns.RR {
	if p := ch.signedOf(l, now); p != nil {
		return p.sigs
	}
	return nil
}

// signedOf is l's signing, done again once it nears expiry; nil when
// signing fails.
func (ch *Chain) signedOf(l *link, now time.Time) *signed {
	if p := l.signed.Load(); p != nil && now.Unix() < p.until {
		return p
	}
	sigs := ch.s.signSet([]dns.RR{l.rr}, now)
	if len(sigs) == 0 {
		return nil
	}
	p := &signed{sigs: sigs, until: until(sigs)}
	p.wire, p.n = packAll(append([]dns.RR{l.rr}, sigs...))
	l.signed.Store(p)
	return p
}

// packAll is rrs packed one after another, uncompressed; nil when one
// does not pack.
func packAll(rrs []dns.RR) ([]byte, int) {
	var b []byte
	for _, rr := range rrs {
		buf := make([]byte, dns.Len(rr)+16)
		off, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			return nil, 0
		}
		b = append(b, buf[:off]...)
	}
	return b, len(rrs)
}

// Deny makes m, a negative answer of the chain's zone to a query for
// qname (lower case) and qtype with the zone's SOA alone in its authority
// section, a signed one: the SOA's signatures and the chain's proof. The
// rcode follows the chain: NXDOMAIN for a name it does not hold, NOERROR
// else. It reports whether the name exists.
func (ch *Chain) Deny(m *dns.Msg, qname string, qtype uint16) bool {
	if len(m.Ns) != 1 || m.Ns[0].Header().Rrtype != dns.TypeSOA {
		return true
	}
	now := ch.s.now()
	m.Ns = ch.s.section(m.Ns, now)
	if ch.nsec3 {
		return ch.deny3(m, qname, qtype, now)
	}
	if i, ok := ch.names[qname]; ok {
		m.Rcode = dns.RcodeSuccess
		l := &ch.links[i]
		if qtype == dns.TypeNSEC { // the NSEC is the answer
			m.Answer = ch.add(m.Answer, l, now)
			m.Ns = nil
			return true
		}
		ch.nodata(m, l, qtype, now)
		return true
	}
	var kb [640]byte
	k, ok := canonKey(kb[:0], qname)
	if !ok {
		return false
	}
	cover := ch.cover(k)
	m.Ns = ch.add(m.Ns, cover, now)
	if ch.ents[qname] {
		// The NSEC before an empty non-terminal names one of its
		// descendants as next: the name exists, without data.
		m.Rcode = dns.RcodeSuccess
		return true
	}
	m.Rcode = dns.RcodeNameError
	ce := ch.closestEncloser(qname)
	// No wildcard at the closest encloser: the NSEC covering *.ce.
	wk, ok := canonKey(kb[:0], ce)
	if !ok {
		return false
	}
	if w := ch.cover(append(wk, 1, '*', 0)); w != cover {
		m.Ns = ch.add(m.Ns, w, now)
	}
	return false
}

// nodata adds the proof that l's owner has no qtype: l itself, or l less
// qtype when l names it.
func (ch *Chain) nodata(m *dns.Msg, l *link, qtype uint16, now time.Time) {
	for i, t := range l.types {
		if t == qtype {
			v := l.less[i]
			m.Ns = append(m.Ns, clone(v))
			for _, sig := range ch.s.rrsetSigs(ch.s.neg, []dns.RR{v}, 0, now) {
				m.Ns = append(m.Ns, clone(sig))
			}
			return
		}
	}
	m.Ns = ch.add(m.Ns, l, now)
}

// add appends l's record and signatures, the reply's own copies.
func (ch *Chain) add(rrs []dns.RR, l *link, now time.Time) []dns.RR {
	rrs = append(rrs, clone(l.rr))
	for _, sig := range ch.sigsOf(l, now) {
		rrs = append(rrs, clone(sig))
	}
	return rrs
}

// cover is the link whose owner is the last at or before key.
func (ch *Chain) cover(key []byte) *link {
	i := sort.Search(len(ch.links), func(i int) bool { return bytes.Compare(ch.links[i].key, key) > 0 })
	if i == 0 {
		i = len(ch.links) // before the first: the last covers it, wrapping
	}
	return &ch.links[i-1]
}

// exists reports whether name is in the zone: a name with data or an
// empty non-terminal.
func (ch *Chain) exists(name string) bool {
	_, ok := ch.names[name]
	return ok || ch.ents[name]
}

// closestEncloser is the longest ancestor of qname that exists; the apex
// at worst.
func (ch *Chain) closestEncloser(qname string) string {
	n := qname
	for n != ch.s.zone {
		off, end := dns.NextLabel(n, 0)
		if end {
			break
		}
		n = n[off:]
		if ch.exists(n) {
			return n
		}
	}
	return ch.s.zone
}

// nextCloser is the ancestor of qname one label below ce.
func nextCloser(qname, ce string) string {
	n := qname
	for {
		off, end := dns.NextLabel(n, 0)
		if end || strings.EqualFold(n[off:], ce) {
			return n
		}
		n = n[off:]
	}
}
