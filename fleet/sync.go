package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// casScript writes the state if its stamp is still ARGV[1] ("" for none),
// and announces the new stamp.
var casScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'stamp') or ''
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2], 'doc', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`)

// maxCAS bounds the compare-and-set attempts of one sync.
const maxCAS = 4

var errStateSize = fmt.Errorf("the shared state is over %d bytes", MaxStateBytes)

// Set applies changes here at once and has them written to the fleet in
// the background; while Redis is unreachable they are kept and written
// when it returns. A Value must be JSON; nil or null deletes the key. A
// change's Time, when set (by Stamp), is its origin's time.
func (f *Fleet) Set(changes ...Change) (*State, error) {
	for _, c := range changes {
		if c.Key == "" {
			return nil, errors.New("fleet: empty key")
		}
		if c.Value != nil && !json.Valid(c.Value) {
			return nil, fmt.Errorf("fleet: value of %s is not JSON", c.Key)
		}
	}
	f.mu.Lock()
	now := f.now().UTC().Round(0)
	st := f.state.Load().clone()
	for _, c := range changes {
		v := c.Value
		if string(v) == "null" {
			v = nil
		}
		prev, had := st.Entries[c.Key]
		t := next(prev, had, cmp.Or(c.Time, now))
		e := Entry{Value: v, Origin: Origin{Member: f.cfg.Member, Time: t}}
		p := pending{entry: e, base: prev.Origin}
		if old, ok := f.pending[c.Key]; ok {
			p.base = old.base
		}
		f.pending[c.Key] = p
		st.Entries[c.Key] = e
	}
	f.state.Store(st)
	f.mu.Unlock()
	f.poke()
	return st, nil
}

// next is the time of a change at t of a key whose entry is prev: a
// change after another wins over it, whatever the clocks.
func next(prev Entry, had bool, t time.Time) time.Time {
	if had && !t.After(prev.Origin.Time) {
		return prev.Origin.Time.Add(time.Microsecond)
	}
	return t
}

// Stamp gives each change the time Set would give it now, so that the
// caller can keep the origins (in its state file) before it calls Set.
func (f *Fleet) Stamp(changes []Change) []Change {
	now := f.now().UTC().Round(0)
	st := f.state.Load()
	out := slices.Clone(changes)
	for i := range out {
		prev, had := st.Entries[out[i].Key]
		out[i].Time = next(prev, had, now)
	}
	return out
}

// Member is this member's id, the Member of its changes' origins.
func (f *Fleet) Member() string { return f.cfg.Member }

// Fits returns an error unless the shared state, with changes made,
// stays within MaxStateBytes: a change the fleet cannot store is refused
// before anyone relies on it, rather than blocking every later one.
func (f *Fleet) Fits(changes []Change) error {
	st := f.state.Load()
	size := 64 // the document's frame
	sizes := make(map[string]int, len(st.Entries))
	for k, e := range st.Entries {
		sizes[k] = entrySize(k, e.Value, e.Origin.Member)
	}
	for _, c := range changes {
		sizes[c.Key] = entrySize(c.Key, c.Value, f.cfg.Member)
	}
	for _, n := range sizes {
		size += n
	}
	if size > MaxStateBytes {
		return &TooLarge{Size: size, Limit: MaxStateBytes}
	}
	return nil
}

// entrySize bounds an entry's length in the stored document: keys and
// member ids are escaped at most 6 bytes a byte; the rest is the origin.
func entrySize(key string, value json.RawMessage, member string) int {
	return 6*len(key) + len(value) + 6*len(member) + 128
}

// TooLarge is a change that would make the shared state larger than
// MaxStateBytes.
type TooLarge struct{ Size, Limit int }

func (e *TooLarge) Error() string {
	return fmt.Sprintf("the fleet's shared state would be about %d bytes, over its limit of %d bytes", e.Size, e.Limit)
}

// syncState reads the shared state and merges it with this member's; when
// Redis lacks something this member has (its pending changes, or what a
// restarted Redis lost) it writes the merge back.
func (f *Fleet) syncState() {
	ctx, cancel := f.ctx()
	defer cancel()
	f.mu.Lock()
	local, stamp, pend, watch := f.state.Load(), f.stamp, maps.Clone(f.pending), f.watch
	f.mu.Unlock()
	if watch != "" {
		f.checkRollback(ctx, watch)
	}
	for range maxCAS {
		rstamp, remote, err := f.readState(ctx, stamp)
		if err != nil {
			f.syncFailed(err, pend)
			return
		}
		if remote == nil && len(pend) == 0 { // unchanged
			f.reached()
			return
		}
		if remote == nil {
			if rstamp, remote, err = f.readState(ctx, ""); err != nil {
				f.syncFailed(err, pend)
				return
			}
		}
		merged := merge(local.Entries, remote.Entries, f.now())
		version := remote.Version
		newStamp := rstamp
		if !sameEntries(merged, remote.Entries) {
			version = max(remote.Version, local.Version) + 1
			for k, e := range merged {
				if e.Origin.Version == 0 {
					e.Origin.Version = version
					merged[k] = e
				}
			}
			newStamp = fmt.Sprintf("%d:%s:%d", version, f.cfg.Member, f.now().UnixNano())
			ok, err := f.cas(ctx, rstamp, newStamp, &doc{Version: version, Entries: merged})
			if err != nil {
				f.syncFailed(err, pend)
				return
			}
			if !ok {
				stamp = "" // someone wrote meanwhile: read again
				continue
			}
		}
		f.commit(local, remote, &State{Version: version, Entries: merged}, newStamp, pend)
		return
	}
	f.failed("state", errors.New("too many concurrent writes"))
}

// readState returns the stored stamp and, unless it is known, the state.
func (f *Fleet) readState(ctx context.Context, known string) (string, *doc, error) {
	var stampCmd *redis.StringCmd
	var sizeCmd *redis.IntCmd
	_, err := f.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		stampCmd = p.HGet(ctx, f.keys.state, "stamp")
		sizeCmd = p.HStrLen(ctx, f.keys.state, "doc")
		return nil
	})
	if errors.Is(err, redis.Nil) && errors.Is(stampCmd.Err(), redis.Nil) {
		return "", &doc{Entries: map[string]Entry{}}, nil // an empty Redis
	}
	if err != nil {
		return "", nil, err
	}
	stamp := stampCmd.Val()
	if known != "" && stamp == known {
		return stamp, nil, nil
	}
	if sizeCmd.Val() > MaxStateBytes {
		return "", nil, errStateSize
	}
	data, err := f.cfg.Client.HGet(ctx, f.keys.state, "doc").Bytes()
	if err != nil {
		return "", nil, err
	}
	d := &doc{}
	if err := json.Unmarshal(data, d); err != nil {
		return "", nil, fmt.Errorf("the shared state %s: %w", f.keys.state, err)
	}
	if d.Entries == nil {
		d.Entries = map[string]Entry{}
	}
	return stamp, d, nil
}

func (f *Fleet) cas(ctx context.Context, old, stamp string, d *doc) (bool, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return false, err
	}
	if len(data) > MaxStateBytes {
		return false, errStateSize
	}
	n, err := casScript.Run(ctx, f.cfg.Client, []string{f.keys.state}, old, stamp, data, f.keys.changes).Int()
	return n == 1, err
}

// syncFailed keeps the pending changes and counts each once as pending.
func (f *Fleet) syncFailed(err error, pend map[string]pending) {
	f.failed("state", err)
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, p := range pend {
		if cur, ok := f.pending[k]; ok && cur.entry.equal(p.entry) && !cur.counted {
			cur.counted = true
			f.pending[k] = cur
			f.changes[ChangeKey{OriginLocal, ResultPending}]++
		}
	}
}

// commit makes merged the local state, keeps the changes Set made during
// the sync, counts, and reports.
func (f *Fleet) commit(local *State, remote *doc, merged *State, stamp string, pend map[string]pending) {
	var conflicts []Conflict
	f.mu.Lock()
	for k, p := range pend {
		r, ok := remote.Entries[k]
		switch {
		case !ok || r.Origin.same(p.base) || r.Origin.same(p.entry.Origin):
			f.changes[ChangeKey{OriginLocal, ResultApplied}]++
		case p.entry.wins(r):
			f.changes[ChangeKey{OriginLocal, ResultApplied}]++
			f.changes[ChangeKey{OriginRemote, ResultLost}]++
			conflicts = append(conflicts, Conflict{Key: k, Winner: merged.Entries[k], Loser: r})
		default:
			f.changes[ChangeKey{OriginLocal, ResultLost}]++
			conflicts = append(conflicts, Conflict{Key: k, Winner: r, Loser: p.entry})
		}
		if cur, ok := f.pending[k]; ok && cur.entry.equal(p.entry) {
			delete(f.pending, k)
		}
	}
	var applied []string
	for k, e := range merged.Entries {
		if _, mine := pend[k]; !mine && !e.equal(local.Entries[k]) && e.Origin.Member != f.cfg.Member {
			f.changes[ChangeKey{OriginRemote, ResultApplied}]++
			if l, ok := local.Entries[k]; !ok || !l.Origin.same(e.Origin) {
				applied = append(applied, k)
			}
		}
	}
	// Changes Set made meanwhile stay on top until the next sync writes them.
	cur := f.state.Load()
	for k, p := range f.pending {
		merged.Entries[k] = p.entry
	}
	changed := !sameEntries(cur.Entries, merged.Entries)
	f.state.Store(merged)
	f.stamp = stamp
	f.mu.Unlock()
	f.reached()
	if f.running.Load() { // not the first read, in Start: that is the state, not a change
		slices.Sort(applied)
		for _, k := range applied {
			e := merged.Entries[k]
			log.Infof("Fleet %s: applying %s of %s by %s at %s", f.cfg.Name, describe(e), k, e.Origin.Member, e.Origin.Time.Format(time.RFC3339Nano))
		}
	}
	for _, c := range conflicts {
		log.Warningf("Fleet %s: %s by %s at %s lost to %s by %s at %s", f.cfg.Name, c.Key,
			c.Loser.Origin.Member, c.Loser.Origin.Time.Format(time.RFC3339Nano),
			describe(c.Winner), c.Winner.Origin.Member, c.Winner.Origin.Time.Format(time.RFC3339Nano))
		if f.cfg.OnConflict != nil {
			f.callback(func() { f.cfg.OnConflict(c) })
		}
	}
	if changed && f.cfg.OnState != nil && f.running.Load() {
		f.callback(func() { f.cfg.OnState(merged) })
	}
}

func describe(e Entry) string {
	if e.Deleted() {
		return "a deletion"
	}
	return "a change"
}
