// Package overrides holds corrections an operator makes to what the
// databases say: a location for a network, or the nodes its clients are
// sent to. The file's entries and the admin API's pins share the type;
// lookups take the longest prefix that contains an address.
package overrides

import (
	"net/netip"
	"slices"
	"time"

	"github.com/gslbdns/gslb/geo"
)

// Entry is one override.
type Entry struct {
	Prefixes []netip.Prefix // masked, IPv4 ones as IPv4
	Location *geo.Location  // the corrected location; nil: none
	Nodes    []string       // the pinned nodes' ids; nil: none
	Expires  time.Time      // zero: never
	Note     string
	Line     int // in the file, 0 for a pin
}

// Table is an immutable set of entries.
type Table struct {
	Entries []Entry
	v4, v6  *trie
}

// New builds a table of entries, which it takes over.
func New(entries []Entry) *Table {
	t := &Table{Entries: entries, v4: newTrie(), v6: newTrie()}
	for i, e := range entries {
		for _, p := range e.Prefixes {
			tr := t.v6
			if p.Addr().Is4() {
				tr = t.v4
			}
			tr.insert(p, int32(i), e.Location != nil, len(e.Nodes) > 0)
		}
	}
	return t
}

// Active returns the table without the entries expired at now, and when the
// next of the rest expires (zero: never).
func (t *Table) Active(now time.Time) (*Table, time.Time) {
	if t == nil {
		return nil, time.Time{}
	}
	var next time.Time
	keep := t.Entries[:0:0]
	for _, e := range t.Entries {
		if !e.Expires.IsZero() && !e.Expires.After(now) {
			continue
		}
		keep = append(keep, e)
		if !e.Expires.IsZero() && (next.IsZero() || e.Expires.Before(next)) {
			next = e.Expires
		}
	}
	if len(keep) == len(t.Entries) {
		return t, next
	}
	return New(keep), next
}

// Len is the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.Entries)
}

// Match is what a stack of tables says of one address.
type Match struct {
	Location *Entry // the entry that corrects the location
	LocBits  uint8  // its prefix length
	Pin      *Entry // the entry that pins the nodes
	// MinBits is the shortest prefix of the address that no other entry
	// cuts into, and no shorter than a matching entry's prefix: a reply's
	// scope must not cover addresses an override answers otherwise.
	MinBits uint8
}

// Lookup consults tables in order of precedence: the first table that
// corrects the location wins it, the first that pins nodes wins them.
func Lookup(tables []*Table, addr netip.Addr) Match {
	var m Match
	addr = addr.Unmap()
	var a []byte
	if addr.Is4() {
		b := addr.As4()
		a = b[:]
	} else {
		b := addr.As16()
		a = b[:]
	}
	for _, t := range tables {
		if t == nil || len(t.Entries) == 0 {
			continue
		}
		tr := t.v6
		if addr.Is4() {
			tr = t.v4
		}
		loc, locBits, pin, pinBits, minBits := tr.lookup(a)
		m.MinBits = max(m.MinBits, minBits)
		if loc >= 0 {
			m.MinBits = max(m.MinBits, uint8(locBits))
			if m.Location == nil {
				m.Location, m.LocBits = &t.Entries[loc], uint8(locBits)
			}
		}
		if pin >= 0 {
			m.MinBits = max(m.MinBits, uint8(pinBits))
			if m.Pin == nil {
				m.Pin = &t.Entries[pin]
			}
		}
	}
	return m
}

// Pinned reports whether node id is one of the pin's.
func (e *Entry) Pinned(id string) bool { return e != nil && slices.Contains(e.Nodes, id) }
