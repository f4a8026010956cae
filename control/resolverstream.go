package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"

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
	// From the stream's end when it starts: "$" on every read would miss
	// what came between two reads.
	last := ""
	for {
		select {
		case <-c.stopCh:
			return
		default:
		}
		recovery.Do("resolvers", func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second+fleet.DefaultTimeout)
			defer cancel()
			if last == "" {
				ms, err := client.XRevRangeN(ctx, key, "+", "-", 1).Result()
				if err != nil {
					warnResolverStream("cannot read", err)
					select {
					case <-c.stopCh:
					case <-time.After(time.Second):
					}
					return
				}
				last = "0-0"
				if len(ms) > 0 {
					last = ms[0].ID
				}
			}
			res, err := client.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 100, Block: time.Second}).Result()
			switch {
			case errors.Is(err, redis.Nil):
				return
			case err != nil:
				warnResolverStream("cannot read", err)
				select {
				case <-c.stopCh:
				case <-time.After(time.Second):
				}
				return
			}
			for _, s := range res {
				for _, m := range s.Messages {
					last = m.ID
					if r, _ := m.Values["run"].(string); r == run {
						continue // our own
					}
					data, _ := m.Values["event"].(string)
					if err := c.resolvers.Apply(context.Background(), []byte(data)); err != nil {
						log.Warningf("resolvers: the fleet's stream: %v", err)
					}
				}
			}
		})
	}
}
