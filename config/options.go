// Package config reads a gslb block of a Corefile into Options. It does no
// I/O and touches no live state: the control plane loads what the options
// name, so that a tool can parse a Corefile the way the server does.
package config

import (
	"net/netip"
	"time"

	"github.com/coredns/coredns/plugin/pkg/fall"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/sign"
)

// Name is the plugin's name, as the Corefile calls it.
const Name = "gslb"

// Defaults of the Corefile options; the location layers' are locate's.
const (
	DefaultTTL     = 60
	DefaultECSMin4 = 24
	DefaultECSMin6 = 48 // the unit of the cache, the canary and the online API: an ECS /48 is a whole unit
	DefaultReload  = 30 * time.Second

	DefaultCooldown      = time.Minute
	DefaultQualityMaxAge = 10 * time.Minute
)

// Options is what the Corefile block says, with defaults applied.
type Options struct {
	File  string // the Corefile's name, for errors found when loading
	Zones []string
	Fall  fall.F

	DB           geo.Files // the local databases, by geo.Format's kind
	CarrierLists []string  // list files or directories
	// CarrierListsOutvote: two databases that agree on a carrier keep it
	// over a list's (carrier_lists_priority agreeing_databases).
	CarrierListsOutvote bool
	Nodes, Overrides    string
	Quality             string
	QualityMaxAge       time.Duration
	Cooldown            time.Duration
	Lines               map[string]int // option -> Corefile line, so that errors found later name it
	TTL                 uint32
	MinTTL              uint32 // ttl MAX MIN: answers that may change soon; 0: MAX
	// SpreadPrefix4 and SpreadPrefix6: the finest unit the spread hashes
	// a client on when its network is wider.
	SpreadPrefix4, SpreadPrefix6 uint8

	ECSMin4, ECSMin6 uint8
	TrustECS         []netip.Prefix // resolvers whose ECS is believed; nil: all
	Params           scoring.Params
	AllDownServfail  bool
	Reload           time.Duration
	MaxFileSize      int64 // of each YAML file
	// The location layers' options (cache, Redis, online API, and any
	// further source): the control plane adds the databases and the
	// carriers and hands them to locate.New.
	locate.Config
	Admin          *admin.Config // its Token is read from AdminTokenFile at load time
	AdminTokenFile string
	Canary         *Canary
	SOA            SOA
	Fleet          *Fleet       // nil: a lone instance
	DNSSEC         *sign.Config // nil: answers are not signed
	RRL            rrl.Config   // the response rate limit; on unless Off
	Feed           *feed.Config // nil: no edge feed
	// Resolvers is the resolver map; nil: queries without usable ECS are
	// decided for the resolver's address.
	Resolvers *resolvers.Config
}

// Canary is the canary line: a candidate node table for a share of the
// client subnets, and when to roll it back.
type Canary struct {
	File    string
	Percent float64
	// RollbackCross is how much higher than stable's the canary's
	// cross-province ratio may be; < 0: no automatic rollback.
	RollbackCross float64
	RollbackMin   uint64 // canary decisions before the ratios are compared
	// Window: a subnet counts for the rollback at most once per window.
	Window time.Duration
	Salt   string // keys the choice of subnets; "": the state file's
	// Plan is the autopilot's; nil: the share is PERCENT and the API's.
	Plan *Plan
}

// Plan is the canary autopilot's: the shares it steps through, how long
// each must hold, and the guards that must hold for it.
type Plan struct {
	Steps       []float64 // percent, rising
	Dwell       time.Duration
	Guards      []Guard
	MinSamples  float64 // requests of each cohort in a place before it is judged
	SourceShare float64 // the most one feed source weighs in a cohort
	Line        int
}

// Guard is one `guard METRIC DELTA`: how much worse than stable's the
// canary's figure may be.
type Guard struct {
	Metric string  // ttfb_p50, ttfb_p95, error_rate, hit_rate, cross
	Delta  float64 // a fraction: +10% is 0.1, +0.2 (points) is 0.002
}

// Guard metrics.
const (
	GuardTTFBP50   = "ttfb_p50"
	GuardTTFBP95   = "ttfb_p95"
	GuardErrorRate = "error_rate"
	GuardHitRate   = "hit_rate"
	GuardCross     = "cross"
)

// Defaults of the canary plan.
const (
	DefaultDwell       = 15 * time.Minute
	DefaultMinSamples  = 20000
	DefaultSourceShare = 0.5
)

// DefaultSteps and DefaultGuards are the plan's defaults.
var (
	DefaultSteps  = []float64{1, 5, 20, 50, 100}
	DefaultGuards = []Guard{{GuardTTFBP50, 0.10}, {GuardTTFBP95, 0.15}, {GuardErrorRate, 0.002}, {GuardHitRate, 0.01}, {GuardCross, 0.02}}
)

// Defaults and bounds of the canary's rollback window and salt.
const (
	DefaultRollbackWindow = time.Minute
	MinSalt               = 16
)

// DefaultRollbackMin is rollback_min's default.
const DefaultRollbackMin = 1000

// Defaults of the soa option: at or above what zone checkers such as
// Zonemaster recommend (refresh 4h, retry 1h, expire 1 week and not below
// refresh, minimum 300..86400).
const (
	DefaultRefresh = 14400
	DefaultRetry   = 3600
	DefaultExpire  = 1209600
	DefaultMinimum = 300
)

// SOA is the soa option: the synthesized SOA's fields. Serial 0: from the
// content.
type SOA struct {
	Serial                          uint32
	Refresh, Retry, Expire, Minimum uint32
	MName, RName                    string
}

// DefaultSOA is the soa option's defaults.
func DefaultSOA() SOA {
	return SOA{Refresh: DefaultRefresh, Retry: DefaultRetry, Expire: DefaultExpire, Minimum: DefaultMinimum}
}

// Unique is what must differ across the gslb blocks of one Corefile (admin
// addresses and state files), with the line that claimed it. The server
// keeps it in the caddy instance's storage, a tool in a variable.
type Unique map[string]int

// TokenFileLine is the key in Options.Lines of the line an error in the
// admin token file is reported at.
const TokenFileLine = "admin token_file"
