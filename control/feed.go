package control

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/scoring"
)

// loadFeed reads the feed sources' tokens and builds the feed; nothing
// without a feed block.
func (c *Control) loadFeed() error {
	o := c.opts
	if o.Feed == nil {
		return nil
	}
	fc := *o.Feed
	fc.Sources = append([]feed.Source(nil), fc.Sources...)
	for i := range fc.Sources {
		s := &fc.Sources[i]
		tok, err := admin.ReadTokenFile(s.TokenFile)
		if err != nil {
			return fmt.Errorf("%s:%d - Error during parsing: feed: source %s: token_file: %v", o.File, s.Line, s.Name, err)
		}
		if o.Admin != nil && tok == o.Admin.Token {
			return fmt.Errorf("%s:%d - Error during parsing: feed: source %s: its token is the admin token: give each its own", o.File, s.Line, s.Name)
		}
		s.Token = tok
	}
	// A Corefile reload keeps the cells of the same zones and listener.
	id := strings.Join(c.zones, " ")
	if o.Admin != nil {
		id += " " + o.Admin.Addr
	}
	c.feed = feed.Open(id, fc, c.place, o.Params.MaxErrorRate)
	c.feed.SetTable(c.table)
	c.feed.Observe = c.observeCanary
	return nil
}

// place is where gslb's own locator puts a client network of the feed.
func (c *Control) place(ctx context.Context, p netip.Prefix) (string, string) {
	r := c.locator.Locate(ctx, p.Addr())
	return r.Province, r.ISP
}

// feedLinks lays the feed's fresh cells over the quality file's rows.
func (c *Control) feedLinks(links *scoring.Links, now time.Time) (*scoring.Links, time.Time) {
	cells := c.fixedCells
	if cells == nil && c.feed != nil {
		cells = c.feed.Cells()
	}
	if cells == nil {
		return links, time.Time{}
	}
	return cells.Links(c.table.Index, links, now, c.opts.Cooldown)
}

// FixCells makes the tools decide with cells (a saved GET /v1/feed)
// instead of the feed's own.
func (c *Control) FixCells(cells *feed.Cells) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fixedCells = cells
	c.publish()
}

// feedTick is the fold's clock; nil without a feed.
func (c *Control) feedTick() (<-chan time.Time, func()) {
	if c.feed == nil {
		return nil, func() {}
	}
	t := time.NewTicker(c.feed.Config().Cycle)
	return t.C, t.Stop
}

// fold runs one cycle of the feed and publishes the view it makes.
func (c *Control) fold(now time.Time) {
	c.feed.Cycle(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canaryCycle(now)
	c.publish()
}

// FeedHandler is POST /v1/feed; nil without a feed block.
func (b *adminBackend) FeedHandler() http.Handler {
	if b.c.feed == nil {
		return nil
	}
	return b.c.feed
}

// FeedCells is GET /v1/feed.
func (b *adminBackend) FeedCells() (any, error) {
	if b.c.feed == nil {
		return nil, admin.ErrNotFound
	}
	return b.c.feed.Cells().JSON(), nil
}

// explainedFeed is an explanation with the cells of the client's place.
type explainedFeed struct {
	*decide.Explanation
	Feed []feed.Cell `json:"feed"`
}

// withCells adds to x the feed's cells that may apply to its client: of
// its province and carrier, its carrier, or its province.
func (c *Control) withCells(x *decide.Explanation) any {
	if c.feed == nil {
		return x
	}
	out := explainedFeed{Explanation: x, Feed: []feed.Cell{}}
	p, isp := x.Location.Province, x.Location.ISP
	for _, cell := range c.feed.Cells().Cells {
		switch cell.Key {
		case feed.Key{Province: p, ISP: isp, Node: cell.Node}, feed.Key{ISP: isp, Node: cell.Node}, feed.Key{Province: p, Node: cell.Node}:
			if p != "" || isp != "" {
				out.Feed = append(out.Feed, cell)
			}
		}
	}
	return out
}
