package fleet

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// tombstoneTTL is how long a deletion is remembered: a member offline for
// longer may bring back what was deleted meanwhile.
const tombstoneTTL = 30 * 24 * time.Hour

// Origin says where a change came from.
type Origin struct {
	Member  string    `json:"member"`
	Time    time.Time `json:"time"`
	Version uint64    `json:"version,omitempty"` // the snapshot that accepted it; 0 while only local
}

// newer reports whether o wins over p: the later time, then the greater
// member id, so every member orders two changes alike.
func (o Origin) newer(p Origin) bool {
	if !o.Time.Equal(p.Time) {
		return o.Time.After(p.Time)
	}
	return o.Member > p.Member
}

func (o Origin) same(p Origin) bool { return o.Member == p.Member && o.Time.Equal(p.Time) }

// Entry is one key of the shared state. A nil Value is a deletion.
type Entry struct {
	Value  json.RawMessage `json:"v,omitempty"`
	Origin Origin          `json:"o"`
	// Over is the origin of the entry its member saw when it made the
	// change; nil: none. A later change over another origin did not see
	// the entry it replaced: a conflict, which the loser's member logs.
	Over *Origin `json:"over,omitempty"`
}

// Deleted reports whether the entry records a deletion.
func (e Entry) Deleted() bool { return e.Value == nil }

func (e Entry) equal(f Entry) bool {
	return e.Origin == f.Origin && bytes.Equal(e.Value, f.Value) && (e.Over == nil) == (f.Over == nil) && (e.Over == nil || *e.Over == *f.Over)
}

// wins reports whether e replaces f in a merge.
func (e Entry) wins(f Entry) bool {
	if e.Origin.same(f.Origin) {
		return bytes.Compare(e.Value, f.Value) > 0 // only after a bug; still deterministic
	}
	return e.Origin.newer(f.Origin)
}

// State is an immutable snapshot of the shared control state: drains,
// pins, the canary share and rollback, each under a key the caller chooses
// (such as "drain/n1", "pin/10.0.0.0/8", "canary").
type State struct {
	Version uint64           `json:"version"`
	Entries map[string]Entry `json:"entries"`
}

// Get returns the live entry of key; false when absent or deleted.
func (s *State) Get(key string) (Entry, bool) {
	if s == nil {
		return Entry{}, false
	}
	e, ok := s.Entries[key]
	return e, ok && !e.Deleted()
}

// Keys returns the live keys starting with prefix, sorted.
func (s *State) Keys(prefix string) []string {
	if s == nil {
		return nil
	}
	var keys []string
	for k, e := range s.Entries {
		if !e.Deleted() && strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *State) clone() *State {
	c := &State{Entries: make(map[string]Entry, len(s.Entries))}
	if s != nil {
		c.Version = s.Version
		maps.Copy(c.Entries, s.Entries)
	}
	return c
}

// Change sets (Value non-nil) or deletes (nil) one key.
type Change struct {
	Key   string
	Value json.RawMessage
	Time  time.Time // the origin's; zero: now
}

// Conflict is two members' changes of one key, made without seeing each
// other: the later one won.
type Conflict struct {
	Key           string
	Winner, Loser Entry
}

// pending is a local change not yet accepted by Redis, with the origin of
// the entry it replaced: another origin in Redis means a conflict.
type pending struct {
	entry   Entry
	base    Origin
	counted bool // as ResultPending
}

// merge returns the per-key later of local and remote entries, dropping
// deletions older than tombstoneTTL at now (Redis's clock). Pending local
// changes are merged separately.
func merge(local, remote map[string]Entry, now time.Time) map[string]Entry {
	out := make(map[string]Entry, len(remote))
	for k, e := range remote {
		out[k] = e
	}
	for k, e := range local {
		if r, ok := out[k]; !ok || e.wins(r) {
			out[k] = e
		}
	}
	for k, e := range out {
		if e.Deleted() && now.Sub(e.Origin.Time) > tombstoneTTL {
			delete(out, k)
		}
	}
	return out
}

func sameEntries(a, b map[string]Entry) bool {
	return maps.EqualFunc(a, b, Entry.equal)
}
