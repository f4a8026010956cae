package sign

import (
	"bytes"
	"crypto/sha1" // #nosec G505 -- NSEC3's hash is SHA-1 (RFC 5155)
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// b32 is the base32 of NSEC3 owner names, without padding (RFC 5155 §3.3).
var b32 = base32.HexEncoding.WithPadding(base32.NoPadding)

// buildNSEC3 makes the NSEC3 chain (RFC 5155): SHA-1, no opt-out, the
// iterations and salt of the config. Empty non-terminals get a record
// with an empty bitmap; the apex names NSEC3PARAM.
func (ch *Chain) buildNSEC3(names []Name, ttl uint32) error {
	z := ch.s.zone
	salt, err := hex.DecodeString(ch.salt)
	if err != nil {
		return fmt.Errorf("zone %s: NSEC3 salt %q is not hex", z, ch.salt)
	}
	ch.saltRaw = salt
	for _, n := range names {
		h := dns.HashName(n.Name, dns.SHA1, ch.iter, ch.salt)
		raw, err := b32.DecodeString(h)
		if h == "" || err != nil {
			return fmt.Errorf("zone %s: name %q does not hash", z, n.Name)
		}
		types := n.Types
		if n.Name == z {
			types = typeBitmap(types, dns.TypeNSEC3PARAM)
		}
		bm := types
		if len(types) > 0 {
			bm = typeBitmap(types, dns.TypeRRSIG)
		}
		rr := &dns.NSEC3{
			Hdr:  dns.RR_Header{Name: strings.ToLower(h) + "." + z, Rrtype: dns.TypeNSEC3, Class: dns.ClassINET, Ttl: ttl},
			Hash: dns.SHA1, Iterations: ch.iter, SaltLength: uint8(len(ch.salt) / 2), Salt: ch.salt,
			HashLength: uint8(len(raw)), TypeBitMap: bm,
		}
		ch.links = append(ch.links, link{key: raw, rr: rr, types: n.Types})
	}
	sort.Slice(ch.links, func(i, j int) bool { return bytes.Compare(ch.links[i].key, ch.links[j].key) < 0 })
	byHash := make(map[string]int, len(ch.links))
	for i := range ch.links {
		l := &ch.links[i]
		if i > 0 && bytes.Equal(l.key, ch.links[i-1].key) {
			return fmt.Errorf("zone %s: two names hash alike (%s)", z, l.rr.Header().Name)
		}
		rr := l.rr.(*dns.NSEC3)
		rr.NextDomain = b32.EncodeToString(ch.links[(i+1)%len(ch.links)].key)
		byHash[string(l.key)] = i
		for _, t := range l.types {
			v := *rr
			v.TypeBitMap = minusType(rr.TypeBitMap, t)
			l.less = append(l.less, &v)
		}
	}
	for _, n := range names {
		raw, _ := b32.DecodeString(dns.HashName(n.Name, dns.SHA1, ch.iter, ch.salt))
		ch.names[n.Name] = byHash[string(raw)]
	}
	ch.param = &dns.NSEC3PARAM{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeNSEC3PARAM, Class: dns.ClassINET, Ttl: 0},
		Hash: dns.SHA1, Iterations: ch.iter, SaltLength: uint8(len(ch.salt) / 2), Salt: ch.salt}
	ch.paramLink.rr = ch.param
	return nil
}

// deny3 is Deny with NSEC3: the matching record for a name that exists,
// else the closest encloser proof and the wildcard's denial (RFC 5155
// §7.2.2).
func (ch *Chain) deny3(m *dns.Msg, qname string, qtype uint16, now time.Time) bool {
	if i, ok := ch.names[qname]; ok {
		m.Rcode = dns.RcodeSuccess
		ch.nodata(m, &ch.links[i], qtype, now)
		return true
	}
	m.Rcode = dns.RcodeNameError
	ce := ch.closestEncloser(qname)
	match := &ch.links[ch.names[ce]]
	m.Ns = ch.add(m.Ns, match, now)
	nc := ch.cover3(nextCloser(qname, ce), "")
	if nc != match {
		m.Ns = ch.add(m.Ns, nc, now)
	}
	if w := ch.cover3(ce, "*"); w != match && w != nc {
		m.Ns = ch.add(m.Ns, w, now)
	}
	return false
}

// cover3 is the link whose hash is the last before that of prefix.name
// (see hash), wrapping: it covers the name.
func (ch *Chain) cover3(name, prefix string) *link {
	h, ok := ch.hash(name, prefix)
	if !ok {
		return &ch.links[0]
	}
	return ch.before(h[:])
}

// before is the link whose hash is the last before raw, wrapping.
func (ch *Chain) before(raw []byte) *link {
	i := sort.Search(len(ch.links), func(i int) bool { return bytes.Compare(ch.links[i].key, raw) >= 0 })
	if i == 0 {
		i = len(ch.links)
	}
	return &ch.links[i-1]
}

// hash is the NSEC3 hash (RFC 5155 §5) of the name prefix.name (prefix
// one plain label, or "" for name alone), as dns.HashName makes it but without its
// allocations: it is on the path of every denied name.
func (ch *Chain) hash(name, prefix string) ([sha1.Size]byte, bool) {
	var w [256 + 2 + 255]byte
	off := 0
	if prefix != "" { // a plain label, such as "*"
		w[0] = byte(len(prefix))
		off = 1 + copy(w[1:64], prefix)
	}
	end, err := dns.PackDomainName(name, w[:256], off, nil, false)
	if err != nil {
		return [sha1.Size]byte{}, false
	}
	for i := 0; i < end; i += int(w[i]) + 1 {
		for j := i + 1; j <= i+int(w[i]) && j < end; j++ {
			if 'A' <= w[j] && w[j] <= 'Z' {
				w[j] += 'a' - 'A'
			}
		}
		if w[i] == 0 {
			break
		}
	}
	buf := append(w[:end], ch.saltRaw...)
	h := sha1.Sum(buf)
	for range ch.iter {
		buf = append(append(w[:0], h[:]...), ch.saltRaw...)
		h = sha1.Sum(buf)
	}
	return h, true
}

// NSEC3 reports whether ch is an NSEC3 chain; false for nil.
func (ch *Chain) NSEC3() bool { return ch != nil && ch.nsec3 }

// NSEC3PARAM puts the zone's NSEC3PARAM RRset into m, an answer to a query
// for it at the apex, with its signatures when do; false without an NSEC3
// chain.
func (ch *Chain) NSEC3PARAM(m *dns.Msg, do bool) bool {
	if !ch.NSEC3() {
		return false
	}
	if !do {
		p := *ch.param
		m.Answer = append(m.Answer, &p)
		return true
	}
	m.Answer = ch.add(m.Answer, &ch.paramLink, ch.s.now())
	return true
}
