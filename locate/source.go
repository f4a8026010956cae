package locate

import (
	"context"
	"net/netip"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/overrides"
)

// Source is one kind of location data and one link of the Locator's chain:
// the cache, the carrier lists, the local databases, Redis and the online
// API today. The chain
// asks each source in order until one is sure.
type Source interface {
	// Name is the source's layer in coredns_gslb_geo_lookups_total.
	Name() string
	// Locate improves q.Loc from what the source knows about q.Addr, and
	// reports whether q.Loc is final: later sources are not asked. q.Loc.Bits
	// is the prefix the answer holds for.
	Locate(ctx context.Context, q *Query) (final bool)
}

// Learner is a Source that keeps what a later source found, for the next
// queries: the cache, and Redis for every instance.
type Learner interface {
	// Learn keeps q.Loc, found by a source after this one. final is false
	// when no source was sure and q.Loc is the best the chain had.
	Learn(ctx context.Context, q *Query, final bool)
}

// Tracer is a Source that says what it did, for a tool that explains a
// decision. A Source that is not a Tracer is traced by its Locate and
// reported under its Name; a source whose Locate sets off work a tool must
// not cause, or that knows more than its answer, implements Tracer.
type Tracer interface {
	// Trace is Locate for a tool: it learns nothing and waits for what
	// Locate only sets off. done is set when an earlier source was final;
	// most sources then say nothing. Locations in the steps are mapped
	// through carriers. It reports whether q.Loc is now final.
	Trace(ctx context.Context, q *Query, done bool, carriers *geo.Carriers) (steps []Step, final bool)
}

// Reopener is a Source whose data is files of its own: the reload path
// watches the chain's Files and, when one changed, has the chain Reopen.
type Reopener interface {
	// Files are the files the source reads.
	Files() []string
	// Reopen reads the files again and swaps them in. On an error, which
	// names the file, the source keeps serving what it had.
	Reopen() error
}

// starter is a Source with work to begin in Locator.Start: a client to
// build, goroutines to run.
type starter interface{ start() }

// closer is a Source to release in Locator.Close. Sources close from the
// end of the chain: a later source may still hand answers to an earlier
// one until it is closed.
type closer interface{ close() error }

// Query is one address on its way down the chain.
type Query struct {
	Addr netip.Addr // unmapped, and never special
	Key  Key
	Loc  geo.Location
	// Override is what the overrides say of the address: the location
	// they correct, the nodes they pin, and the scope they need.
	Override overrides.Match

	// normalized is set by a source whose answer went through the carrier
	// table already (a cache of the chain's own answers).
	normalized bool
	// table is the precomputed table's value id plus one when it placed
	// the address for good (Result.Table).
	table uint32
	// list is what the carrier lists said, for learn to apply last.
	list listHit
	// tag is the content the query started under: what it learns is
	// cached under it, so a lookup that overlaps a reload cannot store an
	// old answer as current.
	tag uint64
}
