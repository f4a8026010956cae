package sign

import (
	"bytes"

	"github.com/miekg/dns"
)

// soaSigned is the last SOA a chain signed, packed, with its signatures.
type soaSigned struct {
	soa   []byte
	sigs  []byte
	n     int
	until int64
}

// AppendDenial appends to b, as uncompressed wire RRs, the authority
// section that Deny would make: soaWire (the zone's SOA packed, soa
// making it on a miss) and its signatures, then the proof. It returns the
// section, the RR count, the rcode and whether the name exists; ok is
// false when the message path must answer (a NODATA for a type the name
// has, an NSEC query, a signing failure).
func (ch *Chain) AppendDenial(b []byte, qname string, qtype uint16, soaWire []byte, soa func() *dns.SOA) (out []byte, n, rcode int, exists, ok bool) {
	now := ch.s.now()
	ss := ch.soaSigs(soaWire, soa)
	if ss == nil {
		return b, 0, 0, false, false
	}
	b = append(append(b, soaWire...), ss.sigs...)
	n = 1 + ss.n
	var proofs [3]*link
	k := 0
	if ch.nsec3 {
		if i, found := ch.names[qname]; found {
			l := &ch.links[i]
			if hasType(l.types, qtype) {
				return b, 0, 0, true, false
			}
			proofs[0], k, exists = l, 1, true
		} else {
			ce := ch.closestEncloser(qname)
			match := &ch.links[ch.names[ce]]
			proofs[0], k = match, 1
			if nc := ch.cover3(nextCloser(qname, ce), ""); nc != match {
				proofs[k], k = nc, k+1
			}
			if w := ch.cover3(ce, "*"); w != proofs[0] && w != proofs[k-1] {
				proofs[k], k = w, k+1
			}
		}
	} else {
		if i, found := ch.names[qname]; found {
			l := &ch.links[i]
			if qtype == dns.TypeNSEC || hasType(l.types, qtype) {
				return b, 0, 0, true, false
			}
			proofs[0], k, exists = l, 1, true
		} else {
			var kb [640]byte
			key, good := canonKey(kb[:0], qname)
			if !good {
				return b, 0, 0, false, false
			}
			cover := ch.cover(key)
			proofs[0], k = cover, 1
			exists = ch.ents[qname]
			if !exists {
				wk, good := canonKey(kb[:0], ch.closestEncloser(qname))
				if !good {
					return b, 0, 0, false, false
				}
				if w := ch.cover(append(wk, 1, '*', 0)); w != cover {
					proofs[1], k = w, 2
				}
			}
		}
	}
	for _, l := range proofs[:k] {
		p := ch.signedOf(l, now)
		if p == nil || p.wire == nil {
			return b, 0, 0, false, false
		}
		b = append(b, p.wire...)
		n += p.n
	}
	rcode = dns.RcodeNameError
	if exists {
		rcode = dns.RcodeSuccess
	}
	return b, n, rcode, exists, true
}

func hasType(types []uint16, t uint16) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// soaSigs is the packed signatures of the SOA soaWire, kept while the SOA
// is the same and they are fresh.
func (ch *Chain) soaSigs(soaWire []byte, soa func() *dns.SOA) *soaSigned {
	now := ch.s.now()
	if p := ch.soa.Load(); p != nil && now.Unix() < p.until && bytes.Equal(p.soa, soaWire) {
		return p
	}
	rr := soa()
	sigs := ch.s.rrsetSigs(ch.s.pos, []dns.RR{rr}, 0, now)
	if len(sigs) == 0 {
		return nil
	}
	w, n := packAll(sigs)
	if w == nil {
		return nil
	}
	p := &soaSigned{soa: append([]byte(nil), soaWire...), sigs: w, n: n, until: until(sigs)}
	ch.soa.Store(p)
	return p
}
