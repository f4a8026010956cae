package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// rollbackTTL keeps a decided rollback past any canary's life.
const rollbackTTL = 30 * 24 * time.Hour

// CanaryCounts are decisions in one window: canary and stable, answered
// from the client's province (same) or not (cross).
type CanaryCounts struct {
	CanarySame, CanaryCross, StableSame, StableCross int64
}

// Rollback is a canary rollback, decided by one member for all.
type Rollback struct {
	Identity string `json:"identity"` // the canary's, as the caller names it
	Reason   string `json:"reason"`
	Origin   Origin `json:"origin"`
}

func (f *Fleet) canaryKey(identity, suffix string) string {
	return f.keys.prefix + "canary:" + identity + ":" + suffix
}

// CanaryAdd adds this member's counts of the window starting at start (of
// the given length) to the fleet's, and returns the fleet's totals.
func (f *Fleet) CanaryAdd(ctx context.Context, identity string, start time.Time, length time.Duration, c CanaryCounts) (CanaryCounts, error) {
	if length <= 0 {
		return CanaryCounts{}, errors.New("fleet: a canary window must have a length")
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	k := f.canaryKey(identity, strconv.FormatInt(start.Unix(), 10))
	var cmds [4]*redis.IntCmd
	_, err := f.cfg.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, field := range [4]string{"cs", "cx", "ss", "sx"} {
			cmds[i] = p.HIncrBy(ctx, k, field, [4]int64{c.CanarySame, c.CanaryCross, c.StableSame, c.StableCross}[i])
		}
		p.PExpire(ctx, k, 3*length)
		return nil
	})
	if err != nil {
		f.failed("canary", err)
		f.repairKey(ctx, k, err)
		return CanaryCounts{}, err
	}
	return CanaryCounts{cmds[0].Val(), cmds[1].Val(), cmds[2].Val(), cmds[3].Val()}, nil
}

// TryRollback decides the rollback of the canary identity unless a member
// did already: it returns the rollback in force and whether this call
// decided it. Every member watching identity, this one too, then reports
// it through OnRollback.
func (f *Fleet) TryRollback(ctx context.Context, identity, reason string) (Rollback, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	rb := Rollback{Identity: identity, Reason: reason, Origin: Origin{Member: f.cfg.Member, Time: f.now().UTC().Round(0)}}
	data, err := json.Marshal(rb)
	if err != nil {
		return Rollback{}, false, err
	}
	k := f.canaryKey(identity, "rollback")
	won, err := f.cfg.Client.SetNX(ctx, k, data, rollbackTTL).Result()
	if err != nil {
		f.failed("canary", err)
		return Rollback{}, false, err
	}
	if won {
		f.cfg.Client.Publish(ctx, f.keys.changes, "rollback")
	} else if rb, err = f.getRollback(ctx, identity); err != nil {
		f.repairKey(ctx, k, err)
		return Rollback{}, false, err
	}
	f.poke()
	return rb, won, nil
}

// WatchCanary makes the state loop watch the rollback of the canary
// identity ("" for none).
func (f *Fleet) WatchCanary(identity string) {
	f.mu.Lock()
	f.watch = identity
	f.mu.Unlock()
	f.poke()
}

func (f *Fleet) getRollback(ctx context.Context, identity string) (Rollback, error) {
	data, err := f.cfg.Client.Get(ctx, f.canaryKey(identity, "rollback")).Bytes()
	if err != nil {
		return Rollback{}, err
	}
	var rb Rollback
	if err := json.Unmarshal(data, &rb); err != nil || rb.Identity != identity {
		return Rollback{}, errBadRecord
	}
	return rb, nil
}

var errBadRecord = errors.New("bad rollback record")

// repairKey deletes the canary key k when err says that it is of the
// wrong type or holds no rollback record: a broken or hostile writer's,
// which would otherwise stop the counts or the rollback for good.
func (f *Fleet) repairKey(ctx context.Context, k string, err error) {
	if !errors.Is(err, errBadRecord) && !redis.HasErrorPrefix(err, "WRONGTYPE") {
		return
	}
	if f.cfg.Client.Del(ctx, k).Err() == nil {
		f.repaired(RepairedKey, 1)
	}
}

func (f *Fleet) checkRollback(ctx context.Context, identity string) {
	rb, err := f.getRollback(ctx, identity)
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			f.failed("canary", err)
			f.repairKey(ctx, f.canaryKey(identity, "rollback"), err)
		}
		return
	}
	f.seenRollback(rb)
}

// seenRollback reports rb through OnRollback once.
func (f *Fleet) seenRollback(rb Rollback) {
	f.mu.Lock()
	seen := f.seen[rb.Identity]
	f.seen[rb.Identity] = true
	f.mu.Unlock()
	if !seen && f.cfg.OnRollback != nil {
		f.callback(func() { f.cfg.OnRollback(rb) })
	}
}
