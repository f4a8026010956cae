package gslb

import (
	"encoding/binary"
	"net"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/request"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/policy"

	"github.com/miekg/dns"
)

// An address, CNAME or negative answer is written as bytes when nothing but
// CoreDNS's scrubbing writer (and its hops from plugin to plugin, which
// pass the bytes on) stands between us and the connection: the
// bytes are the ones the scrubbing writer would have sent for the message
// the other path builds. prometheus's recorder may stand there too: it
// reads the rcode, the size and the plugin, not the message, and we set
// them as the message would have. A plugin that reads the message (log,
// dnstap, rewrite) gets the message path.

// udpUncompressed is the longest UDP reply the scrubbing writer sends
// uncompressed for both families; a longer one takes the message path.
const udpUncompressed = 1220

// wireConn is implemented by a test's writer that stands for the
// connection.
type wireConn interface{ wireConn() }

// What a writer type is to the byte path.
const (
	writerOther   = iota // another plugin's: it reads the message
	writerHop            // CoreDNS's hop from one plugin to the next: it passes bytes on
	writerScrub          // CoreDNS's scrubbing writer
	writerMetrics        // prometheus's recorder
	writerConn           // the DNS library's writer of the connection
)

// messageOnly sends every reply as a message: tests compare what a
// real server's plugins see on both paths.
var messageOnly atomic.Bool

// writerKinds are the writer types seen, with their kinds: a type is
// looked at once. A short list, copied on write, so that reading takes no
// lock and no hashing.
var writerKinds atomic.Pointer[[]writerKind]

type writerKind struct {
	t    reflect.Type
	kind uint8
}

func kindOf(w dns.ResponseWriter) uint8 {
	t := reflect.TypeOf(w)
	if l := writerKinds.Load(); l != nil {
		for i := range *l {
			if (*l)[i].t == t {
				return (*l)[i].kind
			}
		}
	}
	k := classify(w, t)
	for {
		cur := writerKinds.Load()
		var next []writerKind
		if cur != nil {
			if len(*cur) >= 32 {
				return k // a bound on what odd chains can add
			}
			next = append(next, *cur...)
		}
		next = append(next, writerKind{t, k})
		if writerKinds.CompareAndSwap(cur, &next) {
			return k
		}
	}
}

var writerType = reflect.TypeFor[dns.ResponseWriter]()

func classify(w dns.ResponseWriter, t reflect.Type) uint8 {
	if _, ok := w.(wireConn); ok {
		return writerConn
	}
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return writerOther
	}
	e := t.Elem()
	switch {
	case t == reflect.TypeFor[*request.ScrubWriter]():
		return writerScrub
	case t == reflect.TypeFor[*metrics.Recorder]():
		return writerMetrics
	case e.PkgPath() == "github.com/miekg/dns" && e.Name() == "response":
		return writerConn
	case e.PkgPath() == "github.com/coredns/coredns/plugin" && e.Name() == "pluginWriter" && e.NumField() > 0:
		// It only notes which plugin wrote the reply. Its first field, at
		// its start, is the writer it wraps.
		if f := e.Field(0); f.Anonymous && f.Offset == 0 && f.Type == writerType {
			return writerHop
		}
	}
	return writerOther
}

// conn reports whether the reply may be bytes: w is the scrubbing writer
// over the connection, behind CoreDNS's hops only; not signed, no TSIG.
func (a *answer) conn() bool {
	return a.signer == nil && a.plainConn()
}

// plainConn is conn but for the signing: a signed reply's bytes are the
// caller's to make. It notes prometheus's recorder on the way, for flush.
func (a *answer) plainConn() bool {
	a.rec = nil
	if a.r.IsTsig() != nil || messageOnly.Load() {
		return false
	}
	w := a.w
	for range 64 {
		switch kindOf(w) {
		case writerScrub:
			return kindOf(w.(*request.ScrubWriter).ResponseWriter) == writerConn
		case writerHop:
			w = *(*dns.ResponseWriter)(reflect.ValueOf(w).UnsafePointer())
		case writerMetrics:
			rec := w.(*metrics.Recorder)
			if a.rec != nil || rec.Recorder == nil {
				return false
			}
			a.rec, w = rec, rec.Recorder.ResponseWriter
		default:
			return false
		}
	}
	return false
}

func isConn(w dns.ResponseWriter) bool { return kindOf(w) == writerConn }

var wireBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// wire is one reply's bytes under construction.
type wire struct {
	bp   *[]byte // the pooled buffer b came from
	b    []byte
	name []byte // the question's name, packed: the answers' owner
}

// start writes the header and the question. The flags are newReply's;
// the counts are set by finish.
func (a *answer) start(wr *wire, rcode int) bool {
	wr.bp = wireBufs.Get().(*[]byte)
	b := (*wr.bp)[:12]
	r := a.r
	binary.BigEndian.PutUint16(b, r.Id)
	f := uint16(0x8000 | 0x0400) // QR, AA; opcode QUERY
	if r.RecursionDesired {
		f |= 0x0100
	}
	if r.CheckingDisabled {
		f |= 0x0010
	}
	f |= uint16(rcode) & 0xf
	binary.BigEndian.PutUint16(b[2:], f)
	clear(b[4:12])
	q := &r.Question[0]
	wr.b = b
	off, ok := packName(q.Name, b[:cap(b)], 12)
	if !ok {
		var err error
		if off, err = dns.PackDomainName(q.Name, b[:cap(b)], 12, nil, false); err != nil {
			wr.release()
			return false
		}
	}
	wr.name = b[12:off]
	b = binary.BigEndian.AppendUint16(b[:off], q.Qtype)
	wr.b = binary.BigEndian.AppendUint16(b, q.Qclass)
	return true
}

// packName packs name, fully qualified and without escapes, at off in
// msg as dns.PackDomainName does, and returns where it ends; false, for
// PackDomainName to take it, when the name has an escape, a label out of
// bounds or does not fit. A question's name is packed on every reply:
// PackDomainName's frames would deepen the query's stack past its next
// size.
func packName(name string, msg []byte, off int) (int, bool) {
	if len(name) == 0 || len(name) > 255 || name[len(name)-1] != '.' || off+len(name)+1 > len(msg) {
		return 0, false
	}
	if name == "." {
		msg[off] = 0
		return off + 1, true
	}
	start := off
	for i := 0; i < len(name); {
		j := i
		for j < len(name) && name[j] != '.' {
			if name[j] == '\\' {
				return 0, false
			}
			j++
		}
		n := j - i
		if n == 0 || n > 63 {
			return 0, false
		}
		msg[off] = byte(n)
		copy(msg[off+1:], name[i:j])
		off += 1 + n
		i = j + 1
	}
	msg[off] = 0
	if off+1-start > 255 {
		return 0, false
	}
	return off + 1, true
}

// release returns the buffer to the pool, unless it grew past a bound.
func (wr *wire) release() {
	if c := cap(wr.b); c >= 512 && c <= 4096 {
		*wr.bp = wr.b[:0]
		wireBufs.Put(wr.bp)
	}
}

// rr appends an answer of the question's name.
func (wr *wire) rr(qtype uint16, ttl uint32, rdata []byte) {
	b := append(wr.b, wr.name...)
	b = binary.BigEndian.AppendUint16(b, qtype)
	b = binary.BigEndian.AppendUint16(b, dns.ClassINET)
	b = binary.BigEndian.AppendUint32(b, ttl)
	b = binary.BigEndian.AppendUint16(b, uint16(len(rdata)))
	wr.b = append(b, rdata...)
}

// finish sets the counts, appends the OPT the scrubbing writer would
// have left, and holds the reply for flush when it fits the client's size
// without the compression or truncation the message path would apply.
func (a *answer) finish(wr *wire, an, ns int, scope uint8) bool {
	b := wr.b
	size, ar := 0, 0 // the client's size (0: no EDNS), the OPT
	if o := a.r.IsEdns0(); o != nil {
		ttl := o.Hdr.Ttl & 0xff00 // the query's DO and Z, version 0
		if a.ecs != nil {
			ttl = 0
			if o.Do() {
				ttl = 0x8000
			}
		} else if len(o.Option) > 0 {
			wr.release()
			return false // the scrubbing writer echoes those it supports
		}
		b = append(b, 0)
		b = binary.BigEndian.AppendUint16(b, dns.TypeOPT)
		b = binary.BigEndian.AppendUint16(b, o.Hdr.Class)
		b = binary.BigEndian.AppendUint32(b, ttl)
		if a.ecs == nil {
			b = binary.BigEndian.AppendUint16(b, 0)
		} else if b = appendECS(b, a.ecs, scope); b == nil {
			wr.release()
			return false
		}
		size, ar = int(o.Hdr.Class), 1
	}
	wr.b = b
	binary.BigEndian.PutUint16(b[4:], 1)
	binary.BigEndian.PutUint16(b[6:], uint16(an))
	binary.BigEndian.PutUint16(b[8:], uint16(ns))
	binary.BigEndian.PutUint16(b[10:], uint16(ar))
	limit := max(size, dns.MinMsgSize)
	if _, tcp := a.w.RemoteAddr().(*net.TCPAddr); tcp {
		limit = dns.MaxMsgSize
	} else {
		limit = min(limit, udpUncompressed)
	}
	if len(b) > limit {
		wr.release()
		return false
	}
	// The recorder counts the message we would have written: before the
	// scrubbing writer adds the OPT the query has and the message has not.
	a.held, a.less = wire{bp: wr.bp, b: b}, 0
	if ar == 1 && a.ecs == nil {
		a.less = optLen
	}
	return true
}

// optLen is an OPT record's length without options.
const optLen = 11

// appendECS appends the OPT's rdata: the query's ECS option with the
// scope, its address cut to the source prefix; nil when the address does
// not fit the family.
func appendECS(b []byte, e *dns.EDNS0_SUBNET, scope uint8) []byte {
	var ip net.IP
	switch e.Family {
	case 1:
		ip = e.Address.To4()
	case 2:
		ip = e.Address.To16()
	}
	n := (int(e.SourceNetmask) + 7) / 8
	if e.Family != 0 && len(ip) < n || e.Family == 0 && n != 0 {
		return nil
	}
	b = binary.BigEndian.AppendUint16(b, uint16(8+n))
	b = binary.BigEndian.AppendUint16(b, dns.EDNS0SUBNET)
	b = binary.BigEndian.AppendUint16(b, uint16(4+n))
	b = binary.BigEndian.AppendUint16(b, e.Family)
	b = append(b, e.SourceNetmask, scope)
	b = append(b, ip[:n]...)
	if r := e.SourceNetmask % 8; r != 0 {
		b[len(b)-1] &= 0xff << (8 - r)
	}
	return b
}

// wireAddresses writes addresses' reply as bytes; false: take the
// message path.
func (a *answer) wireAddresses(out *decide.Outcome) bool {
	if !a.conn() {
		return false
	}
	// Built in a, not on this frame, and without the iterator: both would
	// deepen the query's stack past its next size. start sets every field.
	wr := &a.build
	if !a.start(wr, dns.RcodeSuccess) {
		return false
	}
	n := 0
	for k := range out.Decision.NOrder {
		_, addrs := out.Answered(k)
		for _, addr := range addrs {
			if out.QType == dns.TypeA {
				ip := addr.As4()
				wr.rr(dns.TypeA, out.TTL, ip[:])
			} else {
				ip := addr.As16()
				wr.rr(dns.TypeAAAA, out.TTL, ip[:])
			}
			n++
		}
	}
	return a.finish(wr, n, 0, out.Scope)
}

// wireCNAME writes cname's reply as bytes; false: take the message path.
func (a *answer) wireCNAME(target string, out *decide.Outcome) bool {
	if !a.conn() {
		return false
	}
	var wr wire
	if !a.start(&wr, dns.RcodeSuccess) {
		return false
	}
	b := append(wr.b, wr.name...)
	b = binary.BigEndian.AppendUint16(b, dns.TypeCNAME)
	b = binary.BigEndian.AppendUint16(b, dns.ClassINET)
	b = binary.BigEndian.AppendUint32(b, out.TTL)
	rdlen := len(b)
	b = append(b, 0, 0)
	if cap(b)-len(b) < 256 {
		b = append(b, make([]byte, 256)...)[:len(b)]
	}
	end, err := dns.PackDomainName(target, b[:cap(b)], len(b), nil, false)
	if err != nil {
		wr.b = b[:0]
		wr.release()
		return false
	}
	binary.BigEndian.PutUint16(b[rdlen:], uint16(end-len(b)))
	wr.b = b[:end]
	return a.finish(&wr, 1, 0, out.Scope)
}

// soaWire is the zone's SOA packed for one view and one set of the next
// plugin's SOAs.
type soaWire struct {
	v    *policy.View
	next *map[string]*dns.SOA
	zone string
	b    []byte
}

// wireNegative writes negative's reply as bytes; false: take the message
// path.
func (a *answer) wireNegative(rcode int, scope uint8) bool {
	if !a.conn() {
		return false
	}
	soa := a.g.soaPacked(a.v, a.zone)
	if soa == nil {
		return false
	}
	var wr wire
	if !a.start(&wr, rcode) {
		return false
	}
	wr.b = append(wr.b, soa...)
	return a.finish(&wr, 0, 1, scope)
}

// wireDenial writes a signed negative answer proven by the zone's chain
// as bytes: the SOA, the proof and their signatures, each packed once;
// false: take the message path.
func (a *answer) wireDenial(scope uint8) bool {
	if a.chain == nil || !a.plainConn() {
		return false
	}
	soa := a.g.soaPacked(a.v, a.zone)
	if soa == nil {
		return false
	}
	var wr wire
	if !a.start(&wr, dns.RcodeSuccess) {
		return false
	}
	b, n, rcode, exists, ok := a.chain.AppendDenial(wr.b, a.qname, a.r.Question[0].Qtype, soa, func() *dns.SOA { return a.g.soa(a.v, a.zone) })
	wr.b = b
	if !ok {
		wr.release()
		return false
	}
	b[3] = b[3]&0xf0 | byte(rcode)
	if !a.finish(&wr, 0, n, scope) {
		return false
	}
	a.mx.denied(a.g.denial, exists)
	return true
}

// soaPacked is soa packed, kept while the view and the next plugin's
// SOAs are the same.
func (g *GSLB) soaPacked(v *policy.View, zone string) []byte {
	next := g.nextSOA.Load()
	if c := g.soaWire.Load(); c != nil && c.v == v && c.next == next && c.zone == zone {
		return c.b
	}
	rr := g.soa(v, zone)
	b := make([]byte, dns.Len(rr)+16)
	off, err := dns.PackRR(rr, b, 0, nil, false)
	if err != nil {
		return nil
	}
	g.soaWire.Store(&soaWire{v: v, next: next, zone: zone, b: b[:off]})
	return b[:off]
}
