package feed

import (
	"time"

	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/scoring"
)

// Links lays the fresh cells over the quality file's fresh rows (base,
// nil for none), for the node table's indices (index), at now: a cell
// takes the place of the file's row for its place and node, with its TTFB
// p50 standing for the row's round trip; the loss stays the one of the
// most specific file row that covers it. A cell that came back from
// max_error_rate ramps its place's clients back over cooldown. It returns
// when that ramp next steps (zero: none).
func (c *Cells) Links(index func(string) (int, bool), base *scoring.Links, now time.Time, cooldown time.Duration) (*scoring.Links, time.Time) {
	if c == nil || c.Count[Fresh] == 0 {
		return base, time.Time{}
	}
	out := base.Clone()
	var next time.Time
	for i := range c.Cells {
		cell := &c.Cells[i]
		if cell.State != Fresh {
			continue
		}
		n, ok := index(cell.Node)
		if !ok {
			continue
		}
		l := scoring.Link{RTTMs: -1, Feed: true, ErrRate: cell.ErrorRatio, Hit: -1}
		if fl, ok := base.Link(cell.Province, cell.ISP, n); ok {
			l.RTTMs, l.Loss = fl.RTTMs, fl.Loss
		}
		if cell.P50 > 0 {
			l.RTTMs = cell.P50
		}
		if cell.HitRatio >= 0 {
			l.Hit = cell.HitRatio
		}
		if !cell.Recovered.IsZero() {
			shed, at := policy.Ramp(cell.Recovered, now, cooldown)
			l.Shed = shed
			if !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		out.Set(cell.Province, cell.ISP, n, l)
	}
	return out, next
}
