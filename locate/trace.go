package locate

import (
	"context"
	"net/netip"

	"github.com/gslbdns/gslb/geo"
)

// Step is what one source said of an address, for a tool that explains a
// decision.
type Step struct {
	// Source: override, list:NAME (a carrier list), geoip (MaxMind's City
	// and ASN databases), ipdb, ip2region, redis, online, or the Name of
	// another source.
	Source   string
	Location geo.Location // carrier mapped through the carrier table
	Found    bool         // the source knew the address
	Final    bool         // the chain stopped here: later sources were not asked
	Err      string       // the source failed (Redis or the online API)
}

// Trace locates addr the way Locate does, for a tool: it skips the cache,
// asks the online API and waits for it, learns nothing, and reports what
// every source it asked said. The local databases are each reported on
// their own, and always.
func (l *Locator) Trace(ctx context.Context, addr netip.Addr) (Result, []Step) {
	addr = addr.Unmap()
	k := KeyOf(addr)
	if bits, ok := geo.Special(addr); ok {
		var r Result
		l.special(addr, k, bits, &r)
		var steps []Step
		if r.Override.Location != nil || r.Override.Pin != nil {
			steps = []Step{{Source: "override", Location: r.Location, Found: r.Override.Location != nil, Final: true}}
		}
		return r, steps
	}
	carriers := l.carriers.Load()
	q := &Query{Addr: addr, Key: k, tag: l.tag.Load()}
	var steps []Step
	final := false
	for _, s := range l.sources {
		var st []Step
		if t, ok := s.(Tracer); ok {
			st, final = t.Trace(ctx, q, final, carriers)
		} else if !final {
			st, final = traceLocate(ctx, s, q, carriers)
		}
		steps = append(steps, st...)
	}
	if !q.normalized {
		carriers.Apply(&q.Loc)
		applyList(q, carriers)
	}
	r := Result{Location: q.Loc, Key: k, Override: q.Override, Scope: max(q.Loc.Bits, q.Override.MinBits)}
	if r.Province == "" && l.refines {
		r.Scope = max(r.Scope, k.Bits())
	}
	return r, steps
}

// traceLocate traces a Source that is not a Tracer: one step under its
// Name, found when final.
func traceLocate(ctx context.Context, s Source, q *Query, carriers *geo.Carriers) ([]Step, bool) {
	final := s.Locate(ctx, q)
	st := Step{Source: s.Name(), Found: final, Final: final}
	if final {
		st.Location = q.Loc
		carriers.Apply(&st.Location)
	}
	return []Step{st}, final
}

// Trace: a tool skips the cache, to see what the sources say today.
func (s *cacheSource) Trace(_ context.Context, _ *Query, done bool, _ *geo.Carriers) ([]Step, bool) {
	return nil, done
}

// Trace reports the override that matched, if any.
func (o *overrideSource) Trace(ctx context.Context, q *Query, done bool, _ *geo.Carriers) ([]Step, bool) {
	if done {
		return nil, true
	}
	final := o.Locate(ctx, q)
	if q.Override.Location == nil && q.Override.Pin == nil {
		return nil, final
	}
	st := Step{Source: "override", Found: true, Final: final}
	if final {
		st.Location = q.Loc
	}
	return []Step{st}, final
}

// Trace reports each database on its own, even after an earlier source was
// final, and marks the one whose answer was final.
func (d *databases) Trace(ctx context.Context, q *Query, done bool, carriers *geo.Carriers) ([]Step, bool) {
	var steps []Step
	if db := d.db.Load(); db != nil {
		for _, said := range db.Explain(q.Addr) {
			carriers.Apply(&said.Location)
			steps = append(steps, Step{Source: said.Name, Location: said.Location, Found: said.Found})
		}
	}
	if done {
		return steps, true
	}
	final := d.Locate(ctx, q)
	if final {
		won := geo.Decided(q.Loc)
		for i := range steps {
			steps[i].Final = steps[i].Final || steps[i].Source == won
		}
	}
	return steps, final
}

// Trace asks the API and waits for its answer, instead of setting off a
// lookup for later queries.
func (o *onlineSource) Trace(ctx context.Context, q *Query, done bool, carriers *geo.Carriers) ([]Step, bool) {
	if done {
		return nil, true
	}
	loc, err := o.fetch(ctx, q.Key.Prefix().Addr(), q.Loc)
	st := Step{Source: "online"}
	if err != nil {
		st.Err = err.Error()
		return []Step{st}, false
	}
	q.Loc, st.Location, st.Found, st.Final = loc, loc, true, true
	carriers.Apply(&st.Location)
	return []Step{st}, true
}
