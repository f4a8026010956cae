package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The shared state is one Redis hash field per key (entries), with the
// version that wrote it (vers), and a stamp naming the last write
// (state). Both scripts touch the three keys, which share the fleet's
// hash tag, so a Redis Cluster runs them atomically: a write of many keys
// is one change, and a read sees all of it or none.

// readScript returns Redis's clock, the keys it repaired (of a type other
// than a hash: deleted, and written back by the members), and unless the
// stamp is still ARGV[1], the stamp, the version and each entry: its
// field, its version and its value when written after version ARGV[2]
// (every entry when stamp ARGV[1] is not among the last 64 writes: a
// failover's new master may lack the writes that led to it, and writes
// since may reuse their versions)
// ("!same" otherwise), "!big" when over ARGV[3] bytes, "!over" past the
// budget of ARGV[4] bytes, "!nover" for a field without a version.
var readScript = redis.NewScript(`
local t = redis.call('TIME')
local repaired = {}
for i = 1, 3 do
  local ty = redis.call('TYPE', KEYS[i])['ok']
  if ty ~= 'none' and ty ~= 'hash' then
    repaired[#repaired + 1] = KEYS[i]
  end
end
if #repaired > 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
local stamp = redis.call('HGET', KEYS[1], 'stamp') or ''
if ARGV[1] ~= '' and stamp == ARGV[1] then
  return {t[1], t[2], repaired}
end
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0') or 0
local known = tonumber(ARGV[2]) or -1
local log = redis.call('HGET', KEYS[1], 'log') or ''
if ARGV[1] == '' or version < known or not string.find('\n' .. log, '\n' .. ARGV[1] .. '\n', 1, true) then
  known = -1
end
local limit, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local out, seen = {}, {}
local vers = redis.call('HGETALL', KEYS[3])
for i = 1, #vers, 2 do
  local f, v = vers[i], tonumber(vers[i + 1]) or 0
  seen[f] = true
  local val = '!same'
  if v > known then
    local n = redis.call('HSTRLEN', KEYS[2], f)
    if n > limit then
      val = '!big'
    elseif n > budget then
      val = '!over'
    else
      budget = budget - n
      val = redis.call('HGET', KEYS[2], f) or '!none'
    end
  end
  out[#out + 1] = f
  out[#out + 1] = tostring(v)
  out[#out + 1] = val
end
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if not seen[f] then
    out[#out + 1] = f
    out[#out + 1] = '0'
    out[#out + 1] = '!nover'
  end
end
return {t[1], t[2], repaired, stamp, tostring(version), out}
`)

// writeScript writes, if the stamp is still ARGV[1] ("" for none), the
// ARGV[5] entries that follow as field, value pairs at version ARGV[3],
// deletes the fields after them, logs the new stamp ARGV[2] among the last
// 64, and announces it on channel ARGV[4].
var writeScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'stamp') or ''
if cur ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[5])
local i = 6
for _ = 1, n do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[3])
  i = i + 2
end
while i <= #ARGV do
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
  i = i + 1
end
local log, cut, n = ARGV[2] .. '\n' .. (redis.call('HGET', KEYS[1], 'log') or ''), 0, 0
for _ = 1, 64 do
  local j = string.find(log, '\n', cut + 1, true)
  if not j then break end
  cut, n = j, n + 1
end
if n == 64 then log = string.sub(log, 1, cut) end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2], 'version', ARGV[3], 'log', log)
redis.call('PUBLISH', ARGV[4], ARGV[2])
return 1
`)

// maxCAS bounds the compare-and-set attempts of one sync.
const maxCAS = 4

// Set applies changes here at once, as one: a reader of State sees all of
// them or none, and they are written to the fleet in one write in the
// background; while Redis is unreachable they are kept and written when
// it returns. A Value must be JSON; nil or null deletes the key. A
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
	now := f.clock()
	st := f.state.Load().clone()
	for _, c := range changes {
		v := c.Value
		if string(v) == "null" {
			v = nil
		}
		prev, had := st.Entries[c.Key]
		t := next(prev, had, cmp.Or(c.Time, now))
		base := prev.Origin
		if old, ok := f.pending[c.Key]; ok {
			base = old.base
		}
		e := Entry{Value: v, Origin: Origin{Member: f.cfg.Member, Time: t}}
		if !base.Time.IsZero() { // what this member saw: a later change that did not see e is a conflict
			o := base
			o.Version = 0
			e.Over = &o
		}
		f.pending[c.Key] = pending{entry: e, base: base}
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
	now := f.clock()
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

// Fits returns an error unless every entry changes make stays within the
// entry limit, and the shared state with them within MaxStateBytes: a
// change the fleet cannot store is refused before anyone relies on it,
// rather than left behind.
func (f *Fleet) Fits(changes []Change) error {
	st := f.state.Load()
	sizes := make(map[string]int, len(st.Entries))
	for k, e := range st.Entries {
		sizes[k] = entrySize(k, e.Value, e.Origin.Member)
	}
	for _, c := range changes {
		n := entrySize(c.Key, c.Value, f.cfg.Member)
		if n > f.cfg.MaxEntryBytes {
			return &TooLarge{Key: c.Key, Size: n, Limit: f.cfg.MaxEntryBytes}
		}
		sizes[c.Key] = n
	}
	size := 0
	for _, n := range sizes {
		size += n
	}
	if size > MaxStateBytes {
		return &TooLarge{Size: size, Limit: MaxStateBytes}
	}
	return nil
}

// entrySize bounds an entry's length in Redis: keys and member ids are
// escaped at most 6 bytes a byte; the rest is the origins.
func entrySize(key string, value json.RawMessage, member string) int {
	return 6*len(key) + len(value) + 12*len(member) + 192
}

// TooLarge is a change that would make an entry (Key) larger than the
// entry limit, or the shared state larger than MaxStateBytes.
type TooLarge struct {
	Key         string // "" for the whole state
	Size, Limit int
}

func (e *TooLarge) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("the fleet's shared state: entry %s would be about %d bytes, over its limit of %d bytes", e.Key, e.Size, e.Limit)
	}
	return fmt.Sprintf("the fleet's shared state would be about %d bytes, over its limit of %d bytes", e.Size, e.Limit)
}

// remote is the shared state as Redis holds it.
type remote struct {
	stamp   string
	version uint64
	entries map[string]Entry
	drop    []string // fields to delete: unreadable, and not this member's to write back
	keep    []string // fields past the read budget: left as they are
}

// syncState reads the shared state and merges it with this member's; when
// Redis lacks something this member has (its pending changes, or what a
// restarted Redis lost) it writes that back, each key apart.
func (f *Fleet) syncState() {
	ctx, cancel := f.ctx()
	defer cancel()
	f.mu.Lock()
	local, last, pend, watch := f.state.Load(), f.remote, maps.Clone(f.pending), f.watch
	f.mu.Unlock()
	if watch != "" {
		f.checkRollback(ctx, watch)
	}
	for range maxCAS {
		r, err := f.readState(ctx, last)
		if err != nil {
			f.syncFailed(err, pend)
			return
		}
		if r == last && len(pend) == 0 { // unchanged
			f.reached()
			return
		}
		merged := merge(local.Entries, r.entries, f.redisNow())
		version := r.version
		stamp := r.stamp
		set, del := f.delta(merged, r)
		if len(set) > 0 || len(del) > 0 {
			version = max(r.version, local.Version) + 1
			for _, k := range set {
				if e := merged[k]; e.Origin.Version == 0 {
					e.Origin.Version = version
					merged[k] = e
				}
			}
			stamp = fmt.Sprintf("%d:%s:%d", version, f.cfg.Member, f.now().UnixNano())
			ok, err := f.write(ctx, r.stamp, stamp, version, merged, set, del)
			if err != nil {
				f.syncFailed(err, pend)
				return
			}
			if !ok {
				last = r // someone wrote meanwhile: read what changed
				continue
			}
		}
		held := maps.Clone(r.entries)
		if stamp != r.stamp {
			for _, k := range set {
				held[k] = merged[k]
			}
			for _, k := range del {
				delete(held, k)
			}
		}
		out := &remote{stamp: stamp, version: version, entries: held}
		f.commit(local, r.entries, &State{Version: version, Entries: maps.Clone(merged)}, out, pend)
		return
	}
	f.failed("state", errors.New("too many concurrent writes"))
}

// delta is what Redis lacks of merged: the keys to write, each within the
// entry limit and all within MaxStateBytes (an entry that is not is left
// out, and logged), and the keys to delete.
func (f *Fleet) delta(merged map[string]Entry, r *remote) (set, del []string) {
	total := 0
	for k, e := range r.entries {
		if m, ok := merged[k]; ok && m.equal(e) {
			total += entrySize(k, e.Value, e.Origin.Member)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		e := merged[k]
		if re, ok := r.entries[k]; ok && re.equal(e) || slices.Contains(r.keep, k) {
			continue // a key past the read budget is left as it is
		}
		n := entrySize(k, e.Value, e.Origin.Member)
		if n > f.cfg.MaxEntryBytes || total+n > MaxStateBytes {
			f.skipped(k, fmt.Sprintf("about %d bytes: not shared, over the limits of an entry (%d) or of the state (%d)", n, f.cfg.MaxEntryBytes, MaxStateBytes))
			continue
		}
		total += n
		set = append(set, k)
	}
	for k := range r.entries {
		if _, ok := merged[k]; !ok {
			del = append(del, k) // aged out
		}
	}
	for _, k := range r.drop {
		if _, ok := merged[k]; !ok {
			del = append(del, k)
		}
	}
	slices.Sort(del)
	return set, slices.Compact(del)
}

// readState reads what changed in Redis since last (nil: everything); it
// returns last itself when nothing did. Entries that do not read are
// logged, counted, and left to be written back or deleted.
func (f *Fleet) readState(ctx context.Context, last *remote) (*remote, error) {
	known, version := "", "-1"
	if last != nil {
		known, version = last.stamp, strconv.FormatUint(last.version, 10)
	}
	keys := []string{f.keys.state, f.keys.entries, f.keys.vers}
	start := f.now()
	res, err := readScript.Run(ctx, f.cfg.Client, keys, known, version, f.cfg.MaxEntryBytes, MaxStateBytes).Slice()
	if err != nil {
		return nil, err
	}
	if len(res) < 3 {
		return nil, fmt.Errorf("the shared state: a reply of %d parts", len(res))
	}
	f.sampleClock(res[0], res[1], start, f.now())
	if rep, _ := res[2].([]any); len(rep) > 0 {
		for _, k := range rep {
			f.skipped(fmt.Sprint(k), "not a hash: deleted; the members write the state back")
		}
		last = nil
	}
	if len(res) == 3 {
		return last, nil
	}
	if len(res) != 6 {
		return nil, fmt.Errorf("the shared state: a reply of %d parts", len(res))
	}
	r := &remote{entries: map[string]Entry{}}
	r.stamp, _ = res[3].(string)
	r.version, _ = strconv.ParseUint(fmt.Sprint(res[4]), 10, 64)
	out, _ := res[5].([]any)
	for i := 0; i+2 < len(out); i += 3 {
		k, _ := out[i].(string)
		val, _ := out[i+2].(string)
		switch val {
		case "!same":
			if last != nil {
				if e, ok := last.entries[k]; ok {
					r.entries[k] = e
					continue
				}
			}
			r.keep = append(r.keep, k) // skipped at an earlier read
		case "!over":
			f.skipped(k, fmt.Sprintf("past the %d bytes read of the shared state: left as it is", MaxStateBytes))
			r.keep = append(r.keep, k)
		case "!big":
			f.skipped(k, fmt.Sprintf("over %d bytes: deleted unless a member has it", f.cfg.MaxEntryBytes))
			r.drop = append(r.drop, k)
		case "!nover", "!none":
			f.skipped(k, "without a version: deleted unless a member has it")
			r.drop = append(r.drop, k)
		default:
			e, err := decodeEntry([]byte(val))
			if err != nil {
				f.skipped(k, err.Error()+": deleted unless a member has it")
				r.drop = append(r.drop, k)
				continue
			}
			r.entries[k] = e
		}
	}
	return r, nil
}

// decodeEntry is an entry as Redis holds it, checked.
func decodeEntry(data []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("not an entry: %w", err)
	}
	if e.Origin.Member == "" { // a zero time is an older state file's entry
		return e, errors.New("not an entry: no origin member")
	}
	if string(e.Value) == "null" {
		e.Value = nil
	}
	return e, nil
}

func (f *Fleet) write(ctx context.Context, old, stamp string, version uint64, merged map[string]Entry, set, del []string) (bool, error) {
	args := make([]any, 0, 5+2*len(set)+len(del))
	args = append(args, old, stamp, version, f.keys.changes, len(set))
	for _, k := range set {
		data, err := json.Marshal(merged[k])
		if err != nil {
			return false, err
		}
		args = append(args, k, data)
	}
	for _, k := range del {
		args = append(args, k)
	}
	n, err := writeScript.Run(ctx, f.cfg.Client, []string{f.keys.state, f.keys.entries, f.keys.vers}, args...).Int()
	return n == 1, err
}

// Reject logs and counts an entry of the state that its reader cannot
// take (malformed for its kind): like an entry that does not read, it is
// skipped, never fatal.
func (f *Fleet) Reject(key, why string) { f.skipped(key, why) }

// skipped logs (at most once a minute a key) and counts an entry that is
// not shared as it is.
func (f *Fleet) skipped(key, why string) {
	f.mu.Lock()
	f.skips++
	now := f.now()
	logIt := now.Sub(f.skipLogged[key]) > time.Minute
	if logIt {
		// Keys are a writer's to choose: forget those past their minute.
		maps.DeleteFunc(f.skipLogged, func(_ string, t time.Time) bool { return now.Sub(t) > time.Minute })
		f.skipLogged[key] = now
	}
	f.mu.Unlock()
	if logIt {
		log.Warningf("Fleet %s: shared state entry %s: %s", f.cfg.Name, key, why)
	}
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
func (f *Fleet) commit(local *State, remote map[string]Entry, merged *State, r *remote, pend map[string]pending) {
	var conflicts []Conflict
	f.mu.Lock()
	for k, p := range pend {
		r, ok := remote[k]
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
	var lost []Conflict
	for k, e := range merged.Entries {
		if _, mine := pend[k]; mine || e.equal(local.Entries[k]) || e.Origin.Member == f.cfg.Member {
			continue
		}
		f.changes[ChangeKey{OriginRemote, ResultApplied}]++
		l, ok := local.Entries[k]
		if !ok || !l.Origin.same(e.Origin) {
			applied = append(applied, k)
		}
		// This member's accepted change, overtaken by one made without
		// seeing it: it lost a conflict, which the winner's member counted
		// when it merged; this one logs it when it learns it.
		if ok && l.Origin.Member == f.cfg.Member && !l.Origin.Time.IsZero() && (e.Over == nil || !e.Over.same(l.Origin)) && e.wins(l) {
			lost = append(lost, Conflict{Key: k, Winner: e, Loser: l})
		}
	}
	// Changes Set made meanwhile stay on top until the next sync writes them.
	cur := f.state.Load()
	for k, p := range f.pending {
		merged.Entries[k] = p.entry
	}
	changed := !sameEntries(cur.Entries, merged.Entries)
	f.state.Store(merged)
	f.remote = r
	f.mu.Unlock()
	f.reached()
	if f.running.Load() { // not the first read, in Start: that is the state, not a change
		slices.Sort(applied)
		for _, k := range applied {
			e := merged.Entries[k]
			log.Infof("Fleet %s: applying %s of %s by %s at %s", f.cfg.Name, describe(e), k, e.Origin.Member, e.Origin.Time.Format(time.RFC3339Nano))
		}
	}
	f.report(conflicts, "", f.cfg.OnConflict)
	slices.SortFunc(lost, func(a, b Conflict) int { return cmp.Compare(a.Key, b.Key) })
	f.report(lost, " (this member)", f.cfg.OnLost)
	if changed && f.cfg.OnState != nil && f.running.Load() {
		f.callback(func() { f.cfg.OnState(merged) })
	}
}

// report logs conflicts, the loser's member named with who, and hands
// each to cb.
func (f *Fleet) report(conflicts []Conflict, who string, cb func(Conflict)) {
	for _, c := range conflicts {
		log.Warningf("Fleet %s: %s by %s%s at %s lost to %s by %s at %s", f.cfg.Name, c.Key,
			c.Loser.Origin.Member, who, c.Loser.Origin.Time.Format(time.RFC3339Nano),
			describe(c.Winner), c.Winner.Origin.Member, c.Winner.Origin.Time.Format(time.RFC3339Nano))
		if cb != nil {
			f.callback(func() { cb(c) })
		}
	}
}

func describe(e Entry) string {
	if e.Deleted() {
		return "a deletion"
	}
	return "a change"
}
