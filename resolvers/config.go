package resolvers

import (
	"time"
)

// Config is the `resolvers` block.
type Config struct {
	Line int // the block's line in the Corefile
	// Beacon is the record whose subdomains are beacons ("" none):
	// LABEL.Beacon is answered as Beacon is, with TTL.
	Beacon  string
	KeyFile string
	Key     []byte // read from KeyFile when the block loads
	TTL     uint32 // the beacons' ttl
	// Window is how long after a beacon's query its fetch joins, and how
	// old a label may be when it is asked.
	Window time.Duration
	// HalfLife decays populations and query counts.
	HalfLife time.Duration
	// MaxResolvers bounds the resolvers kept (the busiest by queries).
	MaxResolvers int
	// MinSamples is the (decayed) count of clients a population needs
	// before it decides.
	MinSamples float64
	// SourceJoins bounds the joins one feed source adds to one resolver
	// per Cycle.
	SourceJoins int
	// Population: queries without usable ECS from a mapped resolver are
	// decided for its population; off, for the resolver's address.
	Population bool
	// Cycle is how often the map is folded and published.
	Cycle time.Duration
}

// Defaults of the block's options.
const (
	DefaultTTL          = 10
	DefaultWindow       = 5 * time.Minute
	DefaultHalfLife     = 6 * time.Hour
	DefaultMaxResolvers = 10000
	DefaultMinSamples   = 20
	DefaultSourceJoins  = 200
	DefaultCycle        = 10 * time.Second
	// MaxPlaces bounds the places kept per resolver: the smallest go.
	MaxPlaces = 32
	// MaxBeacons bounds the beacon table: the oldest queries go.
	MaxBeacons = 1 << 16
)

// DefaultConfig is a block with no options.
func DefaultConfig() Config {
	return Config{TTL: DefaultTTL, Window: DefaultWindow, HalfLife: DefaultHalfLife, MaxResolvers: DefaultMaxResolvers,
		MinSamples: DefaultMinSamples, SourceJoins: DefaultSourceJoins, Population: true, Cycle: DefaultCycle}
}
