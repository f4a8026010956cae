package resolvers

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"time"
)

// beaconTable remembers which resolver asked for each beacon label first,
// and when: a bounded ring whose oldest entries go.
type beaconTable struct {
	entries []beaconEntry
	next    int
	idx     map[string]int
}

type beaconEntry struct {
	label    string
	resolver netip.Addr
	at       time.Time
	joined   bool
}

func newBeaconTable(n int) *beaconTable {
	return &beaconTable{entries: make([]beaconEntry, n), idx: make(map[string]int, n)}
}

// add notes q; a label first asked by another resolver keeps that one.
func (t *beaconTable) add(q beaconQuery) string {
	if i, ok := t.idx[q.label]; ok {
		if t.entries[i].resolver != q.resolver {
			return "replayed"
		}
		return "repeated"
	}
	e := &t.entries[t.next]
	if e.label != "" {
		delete(t.idx, e.label)
	}
	*e = beaconEntry{label: q.label, resolver: q.resolver, at: q.at}
	t.idx[q.label] = t.next
	t.next = (t.next + 1) % len(t.entries)
	return "asked"
}

func (t *beaconTable) get(label string) *beaconEntry {
	if i, ok := t.idx[label]; ok {
		return &t.entries[i]
	}
	return nil
}

// takeBeacons moves the queued beacon queries into the table.
func (m *Map) takeBeacons() {
	if n := m.beaconDrops.Swap(0); n > 0 {
		m.stats.Beacons["dropped"] += n
	}
	for {
		select {
		case q := <-m.beaconQ:
			r := m.beacons.add(q)
			m.stats.Beacons[r]++
			if m.share != nil && r == "asked" && len(m.asked) < MaxBeacons {
				m.asked = append(m.asked, Ask{Label: q.label, Resolver: q.resolver, At: q.at})
			}
		default:
			return
		}
	}
}

// Report is one beacon fetch an edge saw: the label (the first label of
// the Host), the client's network and when.
type Report struct {
	Label  string `json:"label"`
	Client string `json:"client"`
	At     string `json:"at,omitempty"` // RFC 3339; absent: when it arrives
}

// The results of a report.
const (
	Joined    = "joined"    // the client joined the population of the resolver that asked
	Forged    = "forged"    // not a label gslb minted
	Unknown   = "unknown"   // no resolver asked for it (or too long ago to be remembered)
	Late      = "late"      // fetched outside the window after its query
	Duplicate = "duplicate" // the label already joined
	Capped    = "capped"    // the source added its most to that resolver this cycle
	Unplaced  = "unplaced"  // the locator cannot place the client
	Invalid   = "invalid"   // a client or time that does not parse
	// Pending: in a fleet, no member's query reached this one yet; it is
	// tried again until the window ends.
	Pending = "pending"
)

// ReportResults counts a batch's reports by result.
type ReportResults map[string]int

// Report joins a source's beacon fetches to the resolvers that asked for
// them. Each label joins once, only for the resolver that asked for it
// first and within the window, and one source adds at most SourceJoins
// clients to one resolver per cycle: a source can move a population by no
// more than the beacons resolved through that resolver and fetched from it.
func (m *Map) Report(ctx context.Context, source string, reps []Report) ReportResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.takeBeacons()
	res := ReportResults{}
	now := m.now()
	for i := range reps {
		res[m.reportOrWait(ctx, source, reps[i], now)]++
	}
	if m.share != nil {
		if data, err := json.Marshal(Event{Source: source, Reports: reps}); err == nil {
			m.share(data)
		}
	}
	return res
}

func (m *Map) report(ctx context.Context, source string, rep *Report, now time.Time) string {
	if m.labels == nil {
		return Unknown
	}
	if _, ok := m.labels.Check(rep.Label); !ok {
		return Forged
	}
	e := m.beacons.get(strings.ToLower(rep.Label))
	if e == nil {
		return Unknown
	}
	client, err := netip.ParsePrefix(rep.Client)
	if err != nil {
		a, aerr := netip.ParseAddr(rep.Client)
		if aerr != nil {
			return Invalid
		}
		client = netip.PrefixFrom(a.Unmap(), a.BitLen())
	}
	at := now
	if rep.At != "" {
		if at, err = time.Parse(time.RFC3339, rep.At); err != nil {
			return Invalid
		}
	}
	switch {
	case at.Before(e.at.Add(-time.Minute)) || at.Sub(e.at) > m.cfg.Window:
		return Late
	case e.joined:
		return Duplicate
	}
	ks := keys(e.resolver)
	sk := sourceKey{source, ks[0]}
	if m.joins[sk] >= m.cfg.SourceJoins {
		return Capped
	}
	loc := m.intern(m.place(ctx, client.Addr().Unmap()))
	if loc == nil {
		return Unplaced
	}
	e.joined = true
	m.joins[sk]++
	for i, k := range ks {
		if r := m.entry(k); r != nil {
			r.learn(loc, now)
			if i == 0 {
				r.nBeacons++
			}
		}
	}
	return Joined
}
