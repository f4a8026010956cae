package control

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/table"
)

// loadResolvers reads the beacon key and builds the resolver map; nothing
// without a resolvers block.
func (c *Control) loadResolvers() error {
	o := c.opts
	if o.Resolvers == nil {
		return nil
	}
	rc := *o.Resolvers
	if rc.Beacon != "" {
		key, err := admin.ReadTokenFile(rc.KeyFile)
		if err != nil {
			return fmt.Errorf("%s:%d - Error during parsing: resolvers: key_file: %v", o.File, rc.Line, err)
		}
		if len(key) < resolvers.MinKeyLen {
			return fmt.Errorf("%s:%d - Error during parsing: resolvers: key_file %s: %d bytes: a beacon key has at least %d", o.File, rc.Line, rc.KeyFile, len(key), resolvers.MinKeyLen)
		}
		rc.Key = []byte(key)
		if c.table.Records[rc.Beacon] == nil {
			return fmt.Errorf("%s:%d - Error during parsing: resolvers: beacon %s is not a record of node table %s", o.File, rc.Line, rc.Beacon, c.table.Path)
		}
	}
	m, err := resolvers.New(rc, c.placeAddr, nil)
	if err != nil {
		return fmt.Errorf("%s:%d - Error during parsing: resolvers: %v", o.File, rc.Line, err)
	}
	m.SetDetection(detection(c.table))
	c.resolvers = m
	return nil
}

// detection is how long the probes take at the most to find a node down:
// fall failed probes, an interval apart, the last one timing out.
func detection(t *table.Table) time.Duration {
	var d time.Duration
	for _, p := range t.Probes {
		s := p.Spec
		d = max(d, time.Duration(s.Fall)*time.Duration(s.Interval)+time.Duration(s.Timeout))
	}
	return d
}

// resolversID is what a Corefile reload keeps the map for: the same zones
// and admin listener, as the feed's cells.
func (c *Control) resolversID() string {
	id := strings.Join(c.zones, " ")
	if c.opts.Admin != nil {
		id += " " + c.opts.Admin.Addr
	}
	return id
}

// placeAddr is where gslb's own locator puts an address.
func (c *Control) placeAddr(ctx context.Context, a netip.Addr) geo.Location {
	return c.locator.Locate(ctx, a).Location
}

// Resolvers is the resolver map; nil without a resolvers block.
func (c *Control) Resolvers() *resolvers.Map { return c.resolvers }

// resolversTick is the resolver map's clock; nil without one.
func (c *Control) resolversTick() (<-chan time.Time, func()) {
	if c.resolvers == nil {
		return nil, func() {}
	}
	t := time.NewTicker(c.resolvers.Config().Cycle)
	return t.C, t.Stop
}

// sourceOf names the feed source whose token tok is.
func (c *Control) sourceOf(tok string) (string, bool) {
	if c.feed == nil {
		return "", false
	}
	for _, s := range c.feed.Config().Sources {
		if s.Token != "" && subtle.ConstantTimeCompare([]byte(s.Token), []byte(tok)) == 1 {
			return s.Name, true
		}
	}
	return "", false
}

// BeaconHandler is POST /v1/beacons; nil without a beacon.
func (b *adminBackend) BeaconHandler() http.Handler {
	m := b.c.resolvers
	if m == nil || m.Labeler() == nil {
		return nil
	}
	return m.Handler(b.c.sourceOf)
}

// ResolverMap is GET /v1/resolvers.
func (b *adminBackend) ResolverMap() (any, error) {
	if b.c.resolvers == nil {
		return nil, admin.ErrNotFound
	}
	return b.c.resolvers.Observatory(), nil
}

// MintBeacons is GET /v1/beacons?n=N: fresh beacon names.
func (b *adminBackend) MintBeacons(n int) (any, error) {
	m := b.c.resolvers
	if m == nil || m.Labeler() == nil {
		return nil, admin.ErrNotFound
	}
	names := make([]string, n)
	now := time.Now()
	for i := range names {
		names[i] = m.Labeler().Fresh(now) + "." + m.Config().Beacon
	}
	return map[string]any{"names": names, "ttl": m.Config().TTL}, nil
}
