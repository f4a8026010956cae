package resolvers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// In a fleet every member hears its own beacon queries and takes the
// reports posted to it; both go to the fleet (Share), and each member
// applies the others' (Apply), so that every member learns the same
// populations whichever member a resolver asked and an edge reported to.

// Event is what the members share: a cycle's beacon queries, or a batch of
// reports with the source that posted them.
type Event struct {
	Asks    []Ask    `json:"asks,omitempty"`
	Source  string   `json:"source,omitempty"`
	Reports []Report `json:"reports,omitempty"`
}

// Ask is one beacon query.
type Ask struct {
	Label    string     `json:"label"`
	Resolver netip.Addr `json:"resolver"`
	At       time.Time  `json:"at"`
}

// pendingMax bounds the reports kept for labels no member's query has
// reached yet.
const pendingMax = 4096

type pending struct {
	source string
	rep    Report
	until  time.Time
}

// SetShare makes the map hand its events to share (nil: none).
func (m *Map) SetShare(share func([]byte)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.share = share
}

// Apply takes another member's event.
func (m *Map) Apply(ctx context.Context, data []byte) error {
	if len(data) > MaxReportBody {
		return fmt.Errorf("an event of %d bytes", len(data))
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("an event: %v", err)
	}
	if len(e.Asks)+len(e.Reports) > MaxBeacons {
		return fmt.Errorf("an event of %d entries", len(e.Asks)+len(e.Reports))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.takeBeacons()
	for _, a := range e.Asks {
		if m.labels == nil || !a.Resolver.IsValid() {
			continue
		}
		if _, ok := m.labels.Check(a.Label); ok {
			m.stats.Beacons[m.beacons.add(beaconQuery{resolver: a.Resolver.Unmap(), label: strings.ToLower(a.Label), at: a.At})]++
		}
	}
	m.retryPending(ctx)
	now := m.now()
	for i := range e.Reports {
		m.reportOrWait(ctx, e.Source, e.Reports[i], now)
	}
	return nil
}

// reportOrWait takes a report; one whose label no query reached yet waits
// for the window: another member's query may come after.
func (m *Map) reportOrWait(ctx context.Context, source string, rep Report, now time.Time) string {
	r := m.report(ctx, source, &rep, now)
	if r == Unknown && m.share != nil && len(m.pending) < pendingMax {
		m.pending = append(m.pending, pending{source: source, rep: rep, until: now.Add(m.cfg.Window)})
		return Pending
	}
	m.stats.Beacons["report_"+r]++
	return r
}

// retryPending tries the waiting reports again, and drops those past the
// window as unknown.
func (m *Map) retryPending(ctx context.Context) {
	now := m.now()
	kept := m.pending[:0]
	for _, p := range m.pending {
		r := m.report(ctx, p.source, &p.rep, now)
		if r == Unknown && now.Before(p.until) {
			kept = append(kept, p)
			continue
		}
		m.stats.Beacons["report_"+r]++
	}
	clear(m.pending[len(kept):])
	m.pending = kept
}

// shareAsks hands the queries taken since the last cycle to the fleet.
func (m *Map) shareAsks() {
	if m.share == nil || len(m.asked) == 0 {
		return
	}
	data, err := json.Marshal(Event{Asks: m.asked})
	m.asked = m.asked[:0]
	if err == nil {
		m.share(data)
	}
}
