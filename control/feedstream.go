package control

import (
	"context"
	"errors"
	"time"

	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/fleet"
	"github.com/gslbdns/gslb/internal/ratelog"
	"github.com/gslbdns/gslb/internal/recovery"

	"github.com/redis/go-redis/v9"
)

// In a fleet the feed's batches go through a Redis Stream, so that every
// member folds the same rows: the member a batch was posted to adds it,
// every member reads it, and each folds what the others added.

// feedStreamKey is the fleet's stream of feed batches.
func feedStreamKey(fleetName string) string { return "gslb:fleet:{" + fleetName + "}:feed" }

// feedStreamLen bounds the stream: members read it as it grows, so the
// tail kept is only for those that lag.
const feedStreamLen = 10000

var streamWarn ratelog.Limit

// shareFeed sets the feed to add its batches to the fleet's stream, and
// returns the loop that folds the other members' batches; nil outside a
// fleet or without a feed.
func (c *Control) shareFeed() func() {
	if c.feed == nil || c.member == nil {
		return nil
	}
	client, key, me, run := c.member.client, feedStreamKey(c.opts.Fleet.Name), c.opts.Fleet.Member, c.feed.Run()
	c.feed.Share = func(rows []feed.Placed) {
		data, err := feed.EncodePlaced(rows)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), fleet.DefaultTimeout)
		defer cancel()
		err = client.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: feedStreamLen, Approx: true,
			Values: map[string]any{"member": me, "run": run, "rows": data}}).Err()
		if err != nil {
			warnStream("cannot add a batch to", err)
		}
	}
	return func() { c.readFeedStream(client, key) }
}

func warnStream(what string, err error) {
	if ok, dropped := streamWarn.Allow(30 * time.Second); ok {
		log.Warningf("feed: %s the fleet's stream: %v: the other members' cells go stale after max_age, then they decide without them%s", what, err, ratelog.Note(dropped))
	}
}

// readFeedStream folds the other members' batches until the control stops:
// after a reload from where the previous instance was, on a start from the
// entries still within max_age (the stream holds a bounded number).
func (c *Control) readFeedStream(client redis.UniversalClient, key string) {
	c.readStream(client, key, "feed", c.feed.StreamFrom(), func(err error) { warnStream("cannot read", err) }, func(m redis.XMessage) {
		rows, _ := m.Values["rows"].(string)
		run, _ := m.Values["run"].(string)
		if err := c.feed.AddEntry(m.ID, run, []byte(rows)); err != nil {
			log.Warningf("feed: member %v: %v", m.Values["member"], err)
		}
	})
}

// readStream hands each entry of a fleet's stream after from ("" its end
// when the reading starts) to apply, until the control stops; a failed
// read is warned of, and retried a second later.
func (c *Control) readStream(client redis.UniversalClient, key, what, from string, warn func(error), apply func(redis.XMessage)) {
	last := from
	for {
		select {
		case <-c.stopCh:
			return
		default:
		}
		recovery.Do(what, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second+fleet.DefaultTimeout)
			defer cancel()
			var res []redis.XStream
			err := error(nil)
			if last == "" {
				// Not "$" on every read: it would miss what came between two.
				var ms []redis.XMessage
				if ms, err = client.XRevRangeN(ctx, key, "+", "-", 1).Result(); err == nil {
					last = "0-0"
					if len(ms) > 0 {
						last = ms[0].ID
					}
				}
			}
			if err == nil {
				res, err = client.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: 100, Block: time.Second}).Result()
			}
			switch {
			case errors.Is(err, redis.Nil):
				return
			case err != nil:
				warn(err)
				select {
				case <-c.stopCh:
				case <-time.After(time.Second):
				}
				return
			}
			for _, s := range res {
				for _, m := range s.Messages {
					last = m.ID
					apply(m)
				}
			}
		})
	}
}
