// Package rrl limits the rate of responses per client prefix, as BIND,
// Knot and NSD do: a spoofed flood gets few responses, so the server is a
// poor amplifier, while a real client over TCP is never limited.
//
// A response is counted in an account keyed by the client's prefix, its
// kind (answer, denial, error) and what the caller adds (the name and
// type of an answer, the zone of an NXDOMAIN). Each account is a generic
// cell rate: a time, moved on by 1/rate per response and held at most a
// window ahead of now; a response is limited while the time is more than
// a second ahead. So an account gets rate responses a second, bursts of
// one second's worth, and stays limited for up to a window after a flood
// stops. Accounts are words in a fixed table updated by compare-and-swap:
// no lock, no allocation, bounded memory; two accounts that share a slot
// take turns in it.
package rrl

import (
	"encoding/binary"
	"hash/maphash"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/internal/splitmix"
)

// Kind is what a response is, for its account and rate.
type Kind uint8

const (
	Answer Kind = iota // data, a referral to a CNAME, DNSKEY
	Denial             // NXDOMAIN or NODATA
	Error              // SERVFAIL, REFUSED, FORMERR, NOTIMP
	Kinds
)

var kindNames = [Kinds]string{"answer", "denial", "error"}

func (k Kind) String() string { return kindNames[k] }

// Action is what to do with a response.
type Action uint8

const (
	Pass Action = iota // send it
	Drop               // send nothing
	Slip               // send an empty truncated reply: a real client retries over TCP
	Log                // limited, but log_only: send it
)

var actionNames = [...]string{"pass", "drop", "slip", "log_only"}

func (a Action) String() string { return actionNames[a] }

// Config is the limit's settings.
type Config struct {
	Off     bool
	Rates   [Kinds]uint32 // responses a second per account; 0: not limited
	Window  time.Duration
	Slip    uint32 // every Nth limited response slips; 0: none
	Prefix4 uint8  // client prefix lengths an account covers
	Prefix6 uint8
	Exempt  []netip.Prefix
	LogOnly bool
}

// Defaults: BIND's suggestions for an authoritative server, raised for
// answers since a resolver farm behind one /24 asks the same name often.
const (
	DefaultAnswers = 50
	DefaultDenials = 20
	DefaultErrors  = 10
	DefaultWindow  = 15 * time.Second
	DefaultSlip    = 2
	DefaultPrefix4 = 24
	DefaultPrefix6 = 56
	MaxRate        = 1_000_000
	MaxWindow      = time.Hour
)

// DefaultExempt are the loopback networks: a local resolver or load
// balancer, and a source no remote host can forge.
var DefaultExempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// Defaults is the configuration without an rrl option.
func Defaults() Config {
	return Config{
		Rates:   [Kinds]uint32{DefaultAnswers, DefaultDenials, DefaultErrors},
		Window:  DefaultWindow,
		Slip:    DefaultSlip,
		Prefix4: DefaultPrefix4,
		Prefix6: DefaultPrefix6,
		Exempt:  DefaultExempt,
	}
}

// slots is the table's size: a power of two, 512 KiB of accounts.
const slots = 1 << 16

const (
	tatBits = 48 // microseconds: almost nine years
	tatMask = 1<<tatBits - 1
	burst   = int64(time.Second / time.Microsecond)
)

// Limiter is one server block's response rate limit. Safe for concurrent
// use.
type Limiter struct {
	c        Config
	interval [Kinds]int64 // microseconds per response
	window   int64
	epoch    time.Time
	seed     maphash.Seed
	slots    []atomic.Uint64
	limited  atomic.Uint64 // limited responses, for the slip
	now      func() time.Time
}

// New is a limiter for c; nil when c is off.
func New(c Config) *Limiter {
	if c.Off {
		return nil
	}
	l := &Limiter{c: c, window: max(c.Window, time.Second).Microseconds(), epoch: time.Now(),
		seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, slots), now: time.Now}
	for k, r := range c.Rates {
		if r > 0 {
			l.interval[k] = max(1, int64(time.Second/time.Microsecond)/int64(r))
		}
	}
	return l
}

// Hash is the account key of s (a name), for the caller's part of a key.
func (l *Limiter) Hash(s string) uint64 { return maphash.String(l.seed, s) }

// Exempt reports whether ip is never limited.
func (l *Limiter) Exempt(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return true
	}
	a = a.Unmap()
	for _, p := range l.c.Exempt {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Prefix is ip cut to bits (at most 64), as a number, the family in its
// lowest bit: a part of an account's key.
func Prefix(ip net.IP, bits4, bits6 uint8) uint64 {
	if v4 := ip.To4(); v4 != nil {
		return uint64(binary.BigEndian.Uint32(v4)&^(1<<(32-min(bits4, 32))-1))<<1 | 1
	}
	if len(ip) != net.IPv6len {
		return 0
	}
	x := binary.BigEndian.Uint64(ip)
	if bits6 < 64 {
		x &^= 1<<(64-bits6) - 1
	}
	return x &^ 1
}

// Check counts a response of kind to client ip (over UDP; TCP is never
// limited), key being what identifies the response beyond the client's
// prefix and kind, and says what to do with it.
func (l *Limiter) Check(ip net.IP, kind Kind, key uint64) Action {
	iv := l.interval[kind]
	if iv == 0 || l.Exempt(ip) {
		return Pass
	}
	h := splitmix.Mix(Prefix(ip, l.c.Prefix4, l.c.Prefix6) ^ splitmix.Mix(key^uint64(kind)<<56))
	slot := &l.slots[h&(slots-1)]
	tag := h >> tatBits
	now := l.now().Sub(l.epoch).Microseconds() + burst // > 0: a tat of 0 is a fresh account
	var limited bool
	for {
		old := slot.Load()
		tat := int64(old & tatMask)
		if old>>tatBits != tag || tat < now {
			tat = now
		}
		limited = tat-now > burst
		next := min(tat+iv, now+l.window)
		if slot.CompareAndSwap(old, tag<<tatBits|uint64(next)&tatMask) {
			break
		}
	}
	if !limited {
		return Pass
	}
	if l.c.LogOnly {
		return Log
	}
	if n := l.limited.Add(1); l.c.Slip > 0 && n%uint64(l.c.Slip) == 0 {
		return Slip
	}
	return Drop
}
