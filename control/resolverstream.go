package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/internal/ratelog"

	"github.com/redis/go-redis/v9"
)

// In a fleet the resolver map's events (its beacon queries, the reports
// posted to it) go through a Redis Stream, so that every member learns the
// same populations: a resolver may ask one member and its clients' edge
// report to another.

func resolverStreamKey(fleetName string) string { return "gslb:fleet:{" + fleetName + "}:resolvers" }

// resolverStreamLen bounds the stream: members read it as it grows.
const resolverStreamLen = 10000

var resolverStreamWarn ratelog.Limit

// shareResolvers sets the map to add its events to the fleet's stream,
// and returns the loop that applies the other members'; nil outside a
// fleet or without a map.
func (c *Control) shareResolvers() func() {
	if c.resolvers == nil || c.member == nil {
		return nil
	}
	var b [8]byte
	rand.Read(b[:])
	client, key, run := c.member.client, resolverStreamKey(c.opts.Fleet.Name), hex.EncodeToString(b[:])
	c.resolvers.SetShare(func(data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), fleet.DefaultTimeout)
		defer cancel()
		err := client.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: resolverStreamLen, Approx: true,
			Values: map[string]any{"run": run, "event": data}}).Err()
		if err != nil {
			warnResolverStream("cannot add to", err)
		}
	})
	return func() { c.readResolverStream(client, key, run) }
}

func warnResolverStream(what string, err error) {
	if ok, dropped := resolverStreamWarn.Allow(30 * time.Second); ok {
		log.Warningf("resolvers: %s the fleet's stream: %v: members learn only from their own queries and reports meanwhile%s", what, err, ratelog.Note(dropped))
	}
}

// readResolverStream applies the other members' events from the time it
// starts until the control stops.
func (c *Control) readResolverStream(client redis.UniversalClient, key, run string) {
	c.readStream(client, key, "resolvers", "", func(err error) { warnResolverStream("cannot read", err) }, func(m redis.XMessage) {
		if r, _ := m.Values["run"].(string); r == run {
			return // our own
		}
		data, _ := m.Values["event"].(string)
		if err := c.resolvers.Apply(context.Background(), []byte(data)); err != nil {
			log.Warningf("resolvers: the fleet's stream: %v", err)
		}
	})
}
