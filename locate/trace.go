package locate

import (
	"context"
	"net/netip"

	"github.com/gslbdns/gslb/geo"
)

// Step is what one source said of an address, for a tool that explains a
// decision.
type Step struct {
	// Source: override, geoip (MaxMind's City and ASN databases), ipdb,
	// redis or online.
	Source   string
	Location geo.Location // carrier mapped through the carrier table
	Found    bool         // the source knew the address
	Final    bool         // the chain stopped here: later sources were not asked
	Err      string       // the source failed (Redis or the online API)
}

// Trace locates addr the way Locate does, for a tool: it skips the LRU,
// asks the online API and waits for it, learns nothing, and reports what
// every source it asked said. The local databases are each reported on
// their own, and always.
func (l *Locator) Trace(ctx context.Context, addr netip.Addr) (Result, []Step) {
	addr = addr.Unmap()
	k := KeyOf(addr)
	if bits, ok := geo.Special(addr); ok {
		r := l.special(addr, k, bits)
		var steps []Step
		if r.Override.Location != nil || r.Override.Pin != nil {
			steps = []Step{{Source: "override", Location: r.Location, Found: r.Override.Location != nil, Final: true}}
		}
		return r, steps
	}
	carriers := l.carriers.Load()
	q := &Query{Addr: addr, Key: k}
	var steps []Step
	final := false
	for _, s := range l.sources {
		switch s := s.(type) {
		case *lruSource:
			continue
		case *databases:
			if db := s.db.Load(); db != nil {
				mm, ip, ok := db.Explain(addr)
				carriers.Apply(&mm)
				steps = append(steps, Step{Source: "geoip", Location: mm, Found: mm.Source != geo.SourceNone})
				if ok {
					carriers.Apply(&ip)
					steps = append(steps, Step{Source: "ipdb", Location: ip, Found: true})
				}
			}
			if final {
				continue
			}
			if final = s.Locate(ctx, q); final {
				won := "geoip"
				if q.Loc.Source == geo.SourceIPDB {
					won = "ipdb"
				}
				for i := range steps {
					steps[i].Final = steps[i].Final || steps[i].Source == won
				}
			}
			continue
		}
		if final {
			continue
		}
		switch s := s.(type) {
		case *overrideSource:
			final = s.Locate(ctx, q)
			if q.Override.Location != nil || q.Override.Pin != nil {
				st := Step{Source: "override", Found: true, Final: final}
				if final {
					st.Location = q.Loc
				}
				steps = append(steps, st)
			}
		case *redisSource:
			final = s.Locate(ctx, q)
			st := Step{Source: "redis", Found: final, Final: final}
			if final {
				st.Location = q.Loc
			}
			steps = append(steps, st)
		case *onlineSource:
			loc, err := s.fetch(ctx, q.Key.Prefix().Addr(), q.Loc)
			st := Step{Source: "online"}
			if err != nil {
				st.Err = err.Error()
			} else {
				q.Loc, st.Location, st.Found, st.Final = loc, loc, true, true
				final = true
			}
			steps = append(steps, st)
		}
	}
	if !q.normalized {
		carriers.Apply(&q.Loc)
	}
	for i := range steps {
		if st := &steps[i]; st.Source == "redis" || st.Source == "online" {
			carriers.Apply(&st.Location)
		}
	}
	r := Result{Location: q.Loc, Key: k, Override: q.Override, Scope: max(q.Loc.Bits, q.Override.MinBits)}
	if r.Province == "" && l.refines {
		r.Scope = max(r.Scope, k.Bits())
	}
	return r, steps
}
