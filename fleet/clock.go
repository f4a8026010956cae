package fleet

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// The fleet orders changes by their origin times, so it does not take a
// member's wall clock blindly. Each read of the state samples Redis's
// TIME; a change is stamped with the member's clock, but never later than
// Redis's time (as the member reckons it) when the member's clock is
// ahead of it by more than MaxSkew, and never at or before the origin of
// the entry it replaces (next: a hybrid logical clock per key). A fast
// member therefore cannot beat a change made after its own, and ages
// deletions on Redis's clock, so it does not churn. A slow one's change
// made after seeing another's still wins over it; between two members
// that did not see each other's change, the slow one's may lose.
// Skew either way is logged and counted. Until the first read the
// member's own clock serves.

// MaxSkew is how far a member's clock may be from Redis's before the
// skew is logged and counted; ordering does not rely on it either way.
const MaxSkew = time.Second

// clock is a member's view of Redis's time.
type clock struct {
	offset  atomic.Int64 // Redis's clock minus this member's, ns
	sampled atomic.Bool
	// guarded by Fleet.mu:
	skews  uint64
	logged time.Time
	skewed bool
}

// ClockStats are the clock's values for metrics.
type ClockStats struct {
	Offset  time.Duration // Redis's clock minus this member's, at the last read
	Sampled bool          // false: no read yet, the member's own clock serves
	Skews   uint64        // reads that found the clocks more than MaxSkew apart
}

func (c *clock) stats() ClockStats {
	return ClockStats{Offset: time.Duration(c.offset.Load()), Sampled: c.sampled.Load(), Skews: c.skews}
}

// redisNow is Redis's time as this member reckons it.
func (f *Fleet) redisNow() time.Time {
	return f.now().Add(time.Duration(f.clk.offset.Load()))
}

// clock is the physical part of a change's origin made now: the
// member's time, or Redis's when the member is ahead by more than
// MaxSkew.
func (f *Fleet) clock() time.Time {
	t := f.now()
	if r := f.redisNow(); t.After(r.Add(MaxSkew)) {
		t = r
	}
	return t.UTC().Round(0)
}

// sampleClock takes Redis's TIME (seconds, microseconds), read between
// the member's times start and end.
func (f *Fleet) sampleClock(sec, usec any, start, end time.Time) {
	s, err1 := strconv.ParseInt(fmt.Sprint(sec), 10, 64)
	us, err2 := strconv.ParseInt(fmt.Sprint(usec), 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	mid := start.Add(end.Sub(start) / 2)
	off := time.Unix(s, us*1000).Sub(mid)
	f.clk.offset.Store(int64(off))
	f.clk.sampled.Store(true)
	far := off > MaxSkew || off < -MaxSkew
	f.mu.Lock()
	if far {
		f.clk.skews++
	}
	logIt := far && (!f.clk.skewed || end.Sub(f.clk.logged) > time.Hour) || !far && f.clk.skewed
	if logIt {
		f.clk.logged = end
	}
	f.clk.skewed = far
	f.mu.Unlock()
	switch {
	case logIt && far:
		log.Warningf("Fleet %s: this member's clock is %v off Redis's (Redis minus member): changes are ordered and deletions aged on Redis's clock; fix this host's time sync",
			f.cfg.Name, off.Round(time.Millisecond))
	case logIt:
		log.Infof("Fleet %s: this member's clock is within %v of Redis's again", f.cfg.Name, MaxSkew)
	}
}
