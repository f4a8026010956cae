package config

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/rrl"
	"github.com/gslbdns/gslb/scoring"
)

// Parse reads the gslb block at the dispenser: keys are the server block's
// keys (its zones when the line names none), root the server's root
// directory, against which relative paths resolve. seen, when not nil,
// holds what the Corefile's earlier gslb blocks claimed.
func Parse(c *caddyfile.Dispenser, keys []string, root string, seen Unique) (*Options, error) {
	o := &Options{
		File:          c.File(),
		Lines:         map[string]int{},
		DB:            geo.Files{},
		TTL:           DefaultTTL,
		ECSMin4:       DefaultECSMin4,
		ECSMin6:       DefaultECSMin6,
		Params:        scoring.DefaultParams,
		Reload:        DefaultReload,
		Cooldown:      DefaultCooldown,
		QualityMaxAge: DefaultQualityMaxAge,
		Config: locate.Config{CacheSize: locate.DefaultCacheSize, CacheTTL: locate.DefaultCacheTTL,
			Precompute: &locate.PrecomputeConfig{}},
		MaxFileSize:   yamlfile.DefaultMaxSize,
		SOA:           DefaultSOA(),
		SpreadPrefix4: locate.DefaultSpreadPrefix4,
		SpreadPrefix6: locate.DefaultSpreadPrefix6,
		RRL:           rrl.Defaults(),
	}
	path := func(p string) string {
		if !filepath.IsAbs(p) && root != "" {
			return filepath.Join(root, p)
		}
		return p
	}
	blocks := 0
	for c.Next() {
		if blocks++; blocks > 1 {
			return nil, c.Err(Name + " can only be used once per server block")
		}
		o.Zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), keys)
		for c.NextBlock() {
			prop := c.Val()
			o.Lines[prop] = c.Line()
			switch prop {
			case "carrier_lists":
				args := c.RemainingArgs()
				if len(args) == 0 {
					return nil, c.ArgErr()
				}
				for _, a := range args {
					o.CarrierLists = append(o.CarrierLists, path(a))
				}
			case "carrier_lists_priority":
				if !c.NextArg() {
					return nil, c.ArgErr()
				}
				switch c.Val() {
				case "list":
					o.CarrierListsOutvote = false
				case "agreeing_databases":
					o.CarrierListsOutvote = true
				default:
					return nil, c.Errf("carrier_lists_priority: %q is neither list nor agreeing_databases", c.Val())
				}
				if c.NextArg() {
					return nil, c.ArgErr()
				}
			case "overrides":
				if !c.NextArg() {
					return nil, c.ArgErr()
				}
				o.Overrides = path(c.Val())
			case "nodes":
				if !c.NextArg() {
					return nil, c.ArgErr()
				}
				o.Nodes = path(c.Val())
			case "ttl":
				args := c.RemainingArgs()
				if len(args) < 1 || len(args) > 2 {
					return nil, c.Errf("ttl: needs MAX [MIN] in seconds, got %d values", len(args))
				}
				hi, err := strconv.ParseUint(args[0], 10, 32)
				if err != nil || hi < 1 || hi > math.MaxInt32 {
					return nil, c.Errf("ttl: MAX %q is not a whole number in 1..%d", args[0], math.MaxInt32)
				}
				o.TTL, o.MinTTL = uint32(hi), 0
				if len(args) == 2 {
					lo, err := strconv.ParseUint(args[1], 10, 32)
					if err != nil || lo < 1 || lo > hi {
						return nil, c.Errf("ttl: MIN %q is not a whole number in 1..%d (MAX)", args[1], hi)
					}
					o.MinTTL = uint32(lo)
				}
			case "ladder", "ladder6":
				l, err := scoring.ParseLadder(c.RemainingArgs())
				if err != nil {
					return nil, c.Errf("%s: %v", prop, strings.TrimPrefix(err.Error(), "ladder: "))
				}
				if prop == "ladder" {
					o.Params.Ladder = l
				} else {
					o.Params.Ladder6 = l
				}
			case "spread_prefix":
				args := c.RemainingArgs()
				if len(args) < 1 || len(args) > 2 {
					return nil, c.Errf("spread_prefix: needs V4 [V6] prefix lengths (e.g. spread_prefix %d %d), got %d", locate.DefaultSpreadPrefix4, locate.DefaultSpreadPrefix6, len(args))
				}
				v4, err := strconv.ParseUint(args[0], 10, 8)
				if err != nil || v4 < 8 || v4 > 24 {
					return nil, c.Errf("spread_prefix: V4 %q is not a whole number in 8..24", args[0])
				}
				o.SpreadPrefix4 = uint8(v4)
				if len(args) == 2 {
					v6, err := strconv.ParseUint(args[1], 10, 8)
					if err != nil || v6 < 8 || v6 > 48 {
						return nil, c.Errf("spread_prefix: V6 %q is not a whole number in 8..48", args[1])
					}
					o.SpreadPrefix6 = uint8(v6)
				}
			case "ecs_min_prefix":
				args := c.RemainingArgs()
				if len(args) != 2 {
					return nil, c.Errf("ecs_min_prefix: needs two prefix lengths, V4 and V6 (e.g. ecs_min_prefix %d %d), got %d", DefaultECSMin4, DefaultECSMin6, len(args))
				}
				v4, err4 := strconv.ParseUint(args[0], 10, 8)
				v6, err6 := strconv.ParseUint(args[1], 10, 8)
				if err4 != nil || v4 > 32 {
					return nil, c.Errf("ecs_min_prefix: V4 %q is not a whole number in 0..32", args[0])
				}
				if err6 != nil || v6 > 128 {
					return nil, c.Errf("ecs_min_prefix: V6 %q is not a whole number in 0..128", args[1])
				}
				o.ECSMin4, o.ECSMin6 = uint8(v4), uint8(v6)
			case "trust_ecs":
				ps, err := prefixArgs(c)
				if err != nil {
					return nil, err
				}
				o.TrustECS = append(o.TrustECS, ps...)
			case "weights":
				w, err := weightsArg(c)
				if err != nil {
					return nil, err
				}
				o.Params.Weights = w
			case "max_load":
				f, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				if f == 0 {
					return nil, c.Err("max_load: must be above 0")
				}
				o.Params.MaxLoad = f
			case "spread":
				f, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				o.Params.Spread = f
			case "shed_load":
				low, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				high, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				if high <= low {
					return nil, c.Errf("shed_load: HIGH %g must be above LOW %g", high, low)
				}
				o.Params.ShedLow, o.Params.ShedHigh = low, high
			case "cooldown":
				d, err := durationArg(c, 0)
				if err != nil {
					return nil, err
				}
				o.Cooldown = d
			case "answers":
				n, err := uintArg(c, 1, scoring.MaxAnswers)
				if err != nil {
					return nil, err
				}
				o.Params.Answers = int(n)
			case "quality":
				if !c.NextArg() {
					return nil, c.ArgErr()
				}
				o.Quality = path(c.Val())
			case "quality_max_age":
				d, err := durationArg(c, time.Second)
				if err != nil {
					return nil, err
				}
				o.QualityMaxAge = d
			case "max_loss":
				f, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				if f == 0 {
					return nil, c.Err("max_loss: must be above 0")
				}
				o.Params.MaxLoss = f
			case "max_error_rate":
				f, err := floatArg(c, 0, 1)
				if err != nil {
					return nil, err
				}
				o.Params.MaxErrorRate = f
			case "feed":
				fc, err := parseFeed(c, path)
				if err != nil {
					return nil, err
				}
				o.Feed = fc
			case "resolvers":
				rc, err := parseResolvers(c, path)
				if err != nil {
					return nil, err
				}
				o.Resolvers = rc
			case "fallthrough":
				o.Fall.SetZonesFromArgs(c.RemainingArgs())
			case "all_down":
				if !c.NextArg() {
					return nil, c.ArgErr()
				}
				switch c.Val() {
				case "open":
					o.AllDownServfail = false
				case "servfail":
					o.AllDownServfail = true
				default:
					return nil, c.Errf("all_down: %q is neither open nor servfail", c.Val())
				}
			case "reload":
				d, err := durationArg(c, 0)
				if err != nil {
					return nil, err
				}
				if d != 0 && d < time.Second {
					return nil, c.Errf("reload: %s is shorter than 1s (0 disables)", d)
				}
				o.Reload = d
			case "cache_size":
				n, err := uintArg(c, 1, math.MaxInt32)
				if err != nil {
					return nil, err
				}
				o.CacheSize = int(n)
			case "precompute":
				p, err := precomputeArgs(c)
				if err != nil {
					return nil, err
				}
				o.Precompute = p
			case "max_file_size":
				n, err := sizeArg(c)
				if err != nil {
					return nil, err
				}
				o.MaxFileSize = n
			case "cache_ttl":
				d, err := durationArg(c, time.Second)
				if err != nil {
					return nil, err
				}
				o.CacheTTL = d
			case "redis":
				r, err := parseRedis(c)
				if err != nil {
					return nil, err
				}
				o.Redis = r
			case "online":
				on, err := parseOnline(c)
				if err != nil {
					return nil, err
				}
				o.Online = on
			case "admin":
				a, err := parseAdmin(c, o, path, seen)
				if err != nil {
					return nil, err
				}
				o.Admin = a
			case "canary":
				cn, err := parseCanary(c, path)
				if err != nil {
					return nil, err
				}
				o.Canary = cn
			case "fleet":
				f, err := parseFleet(c)
				if err != nil {
					return nil, err
				}
				o.Fleet = f
			case "soa":
				if err := parseSOA(c, &o.SOA); err != nil {
					return nil, err
				}
			case "dnssec":
				sc, err := parseDNSSEC(c, root)
				if err != nil {
					return nil, err
				}
				o.DNSSEC = &sc
			case "rrl":
				if err := parseRRL(c, &o.RRL); err != nil {
					return nil, err
				}
			default:
				f := geo.FormatByOption(prop)
				if f == nil {
					return nil, c.Errf("unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties[""]))
				}
				if err := parseDB(c, o, f, path); err != nil {
					return nil, err
				}
			}
			switch prop {
			case "fallthrough", "redis", "online", "admin", "canary", "soa", "trust_ecs", "fleet", "dnssec", "rrl", "feed", "resolvers":
			default:
				if args := c.RemainingArgs(); len(args) != 0 {
					return nil, c.Errf("unexpected argument %q", args[0])
				}
			}
		}
	}
	if !o.DB.Enough() {
		return nil, c.Err(geo.Required())
	}
	if o.Nodes == "" {
		return nil, c.Err("nodes FILE is required")
	}
	if o.Feed != nil && o.Admin == nil {
		return nil, c.Errf("feed at line %d: an admin block is required: POST /v1/feed is on its listener", o.Feed.Line)
	}
	if o.Canary != nil && o.Canary.Plan != nil && o.Feed == nil {
		return nil, c.Errf("canary at line %d: a plan (steps, dwell, guard) needs a feed block: the autopilot looks at its guards every feed cycle", o.Canary.Plan.Line)
	}
	if o.Resolvers != nil && o.Resolvers.Beacon != "" && o.Feed == nil {
		return nil, c.Errf("resolvers at line %d: a beacon needs a feed block: the edges report its fetches with their sources' tokens", o.Resolvers.Line)
	}
	if o.CarrierListsOutvote && len(o.CarrierLists) == 0 {
		return nil, c.Errf("carrier_lists_priority at line %d: no carrier_lists to give it to", o.Lines["carrier_lists_priority"])
	}
	if o.Fleet != nil && o.Redis == nil {
		return nil, c.Errf("fleet %s at line %d: a redis block is required: the fleet shares its state through it", o.Fleet.Name, o.Fleet.Line)
	}
	return o, nil
}

// parseDB reads a database option: its files (the last line of an
// option wins).
func parseDB(c *caddyfile.Dispenser, o *Options, f *geo.Format, path func(string) string) error {
	if f.MaxFiles == 1 {
		if !c.NextArg() {
			return c.ArgErr()
		}
		o.DB[f.Kind] = []string{path(c.Val())}
		return nil
	}
	args := c.RemainingArgs()
	if len(args) == 0 || len(args) > f.MaxFiles {
		return c.Errf("%s: needs %s, got %d", f.Option, f.Args, len(args))
	}
	o.DB[f.Kind] = nil
	for _, a := range args {
		o.DB[f.Kind] = append(o.DB[f.Kind], path(a))
	}
	return nil
}

// parseAdmin reads `admin ADDRESS { token_file FILE; state FILE }` into
// o. The token file is read when the block loads.
func parseAdmin(c *caddyfile.Dispenser, o *Options, path func(string) string, seen Unique) (*admin.Config, error) {
	if !c.NextArg() {
		return nil, c.Err("admin: ADDRESS is required, e.g. 127.0.0.1:9154")
	}
	a := &admin.Config{Addr: c.Val()}
	if _, _, err := net.SplitHostPort(a.Addr); err != nil {
		return nil, c.Errf("admin: %q is not HOST:PORT", a.Addr)
	}
	var tokenFile string
	err := subBlock(c, func() error {
		switch c.Val() {
		case "token_file":
			if !c.NextArg() {
				return c.ArgErr()
			}
			tokenFile = path(c.Val())
		case "state":
			if !c.NextArg() {
				return c.ArgErr()
			}
			a.State = path(c.Val())
		default:
			return c.Errf("admin: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["admin"]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if tokenFile != "" {
		o.AdminTokenFile, o.Lines[TokenFileLine] = tokenFile, c.Line()
	}
	if tokenFile == "" && !admin.Loopback(a.Addr) {
		return nil, c.Errf("admin: %s is not a loopback address: token_file is required", a.Addr)
	}
	if seen == nil {
		return a, nil
	}
	// Compared as what they name, not as they are spelled.
	if line, dup := addrClash(seen, a.Addr); dup {
		return nil, c.Errf("admin: %s is already the admin address of the gslb block at line %d", a.Addr, line)
	}
	seen[addrKey(a.Addr)] = c.Line()
	if a.State != "" {
		line, dup := seen[stateKey(a.State)]
		if !dup {
			line, dup = sameStateFile(seen, a.State)
		}
		if dup {
			return nil, c.Errf("admin: state %s is already the state file of the gslb block at line %d", a.State, line)
		}
		seen[stateKey(a.State)] = c.Line()
	}
	return a, nil
}

// parseCanary reads `canary FILE PERCENT { rollback_cross DELTA; rollback_min N;
// rollback_window DURATION; salt SECRET }`.
func parseCanary(c *caddyfile.Dispenser, path func(string) string) (*Canary, error) {
	if !c.NextArg() {
		return nil, c.Err("canary: FILE PERCENT is required")
	}
	cn := &Canary{File: path(c.Val()), RollbackCross: -1, RollbackMin: DefaultRollbackMin, Window: DefaultRollbackWindow}
	line, hasPercent, open := c.Line(), false, false
	if c.NextArg() {
		if c.Val() == "{" {
			open = true
		} else {
			p, err := strconv.ParseFloat(c.Val(), 64)
			if err != nil || math.IsNaN(p) || p < 0 || p > 100 {
				return nil, c.Errf("canary: PERCENT %q is not a number in 0..100", c.Val())
			}
			cn.Percent, hasPercent = p, true
		}
	}
	plan := &Plan{Dwell: DefaultDwell, MinSamples: DefaultMinSamples, SourceShare: DefaultSourceShare, Line: line}
	planned := false
	prop := func() error {
		switch c.Val() {
		case "steps", "dwell", "guard", "min_samples", "source_share":
			planned = true
			return parsePlan(c, plan)
		case "rollback_cross":
			f, err := floatArg(c, 0, 1)
			if err != nil {
				return err
			}
			cn.RollbackCross = f
		case "rollback_min":
			n, err := uintArg(c, 1, math.MaxInt32)
			if err != nil {
				return err
			}
			cn.RollbackMin = n
		case "rollback_window":
			d, err := durationArg(c, time.Second)
			if err != nil {
				return err
			}
			cn.Window = d
		case "salt":
			if !c.NextArg() {
				return c.ArgErr()
			}
			// An unset {$VAR} reads as "": never a silent, guessable salt.
			if cn.Salt = c.Val(); len(cn.Salt) < MinSalt {
				return c.Errf("canary: salt must be a secret of at least %d characters, got %d (an unset environment variable?)", MinSalt, len(cn.Salt))
			}
		default:
			return c.Errf("canary: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["canary"]))
		}
		return nil
	}
	var err error
	if open {
		err = blockBody(c, prop)
	} else {
		err = subBlock(c, prop)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case planned && hasPercent:
		return nil, c.Errf("canary at line %d: PERCENT and a plan (steps, dwell, guard): the plan sets the share, drop PERCENT", line)
	case planned:
		if plan.Steps == nil {
			plan.Steps = DefaultSteps
		}
		if plan.Guards == nil {
			plan.Guards = DefaultGuards
		}
		cn.Plan, cn.Percent = plan, plan.Steps[0]
	case !hasPercent:
		return nil, c.Errf("canary at line %d: PERCENT is required, or a plan (steps, dwell, guard) for the autopilot", line)
	}
	return cn, nil
}

// parsePlan reads one of the autopilot's properties into p: `steps P...`,
// `dwell DURATION`, `guard METRIC DELTA`, `min_samples N`, `source_share F`.
func parsePlan(c *caddyfile.Dispenser, p *Plan) error {
	switch c.Val() {
	case "steps":
		args := c.RemainingArgs()
		if len(args) == 0 {
			return c.Err("canary: steps: at least one PERCENT is required, e.g. steps 1 5 20 50 100")
		}
		p.Steps = nil
		for _, a := range args {
			f, err := strconv.ParseFloat(a, 64)
			if err != nil || math.IsNaN(f) || f <= 0 || f > 100 {
				return c.Errf("canary: steps: %q is not a percent in (0, 100]", a)
			}
			if n := len(p.Steps); n > 0 && f <= p.Steps[n-1] {
				return c.Errf("canary: steps: %s does not rise above %g", a, p.Steps[n-1])
			}
			p.Steps = append(p.Steps, f)
		}
	case "dwell":
		d, err := durationArg(c, time.Second)
		if err != nil {
			return err
		}
		p.Dwell = d
	case "min_samples":
		n, err := uintArg(c, 1, 1e12)
		if err != nil {
			return err
		}
		p.MinSamples = float64(n)
	case "source_share":
		f, err := floatArg(c, 0.05, 1)
		if err != nil {
			return err
		}
		p.SourceShare = f
	case "guard":
		g, err := parseGuard(c)
		if err != nil {
			return err
		}
		for _, o := range p.Guards {
			if o.Metric == g.Metric {
				return c.Errf("canary: guard %s: given twice", g.Metric)
			}
		}
		p.Guards = append(p.Guards, g)
	}
	return nil
}

// parseGuard reads `guard METRIC DELTA`: ttfb_p50 and ttfb_p95 take +N%,
// error_rate +N percentage points, hit_rate -N points, cross +F (a ratio).
func parseGuard(c *caddyfile.Dispenser) (Guard, error) {
	args := c.RemainingArgs()
	if len(args) != 2 {
		return Guard{}, c.Err("canary: guard METRIC DELTA, e.g. guard ttfb_p50 +10%")
	}
	g, v := Guard{Metric: args[0]}, args[1]
	sign, unit, hi := "+", "", 0.0
	switch g.Metric {
	case GuardTTFBP50, GuardTTFBP95:
		unit, hi = "%", 1000
	case GuardErrorRate:
		hi = 100
	case GuardHitRate:
		sign, hi = "-", 100
	case GuardCross:
		hi = 1
	default:
		return Guard{}, c.Errf("canary: guard %q: not one of ttfb_p50, ttfb_p95, error_rate, hit_rate, cross%s", g.Metric,
			suggest.Hint(g.Metric, []string{GuardTTFBP50, GuardTTFBP95, GuardErrorRate, GuardHitRate, GuardCross}))
	}
	num, ok := strings.CutPrefix(v, sign)
	if ok && unit != "" {
		num, ok = strings.CutSuffix(num, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsNaN(f) || f < 0 || f > hi {
		return Guard{}, c.Errf("canary: guard %s: %q is not %sN%s with N in 0..%g", g.Metric, v, sign, unit, hi)
	}
	g.Delta = f
	if g.Metric != GuardCross {
		g.Delta = f / 100 // percent, or percentage points
	}
	return g, nil
}

func parseRedis(c *caddyfile.Dispenser) (*locate.RedisConfig, error) {
	r := &locate.RedisConfig{Addrs: c.RemainingArgs()}
	if len(r.Addrs) == 0 {
		return nil, c.Err("redis: at least one ADDRESS is required")
	}
	err := subBlock(c, func() error {
		switch c.Val() {
		case "password":
			if !c.NextArg() {
				return c.ArgErr()
			}
			r.Password = c.Val()
			if r.Password == "" { // {$VAR} of an unset variable: Redis would answer NOAUTH
				return c.Err("redis: password is empty (is its environment variable unset?)")
			}
		case "username":
			if !c.NextArg() {
				return c.ArgErr()
			}
			if r.Username = c.Val(); r.Username == "" {
				return c.Err("redis: username is empty (is its environment variable unset?)")
			}
		case "db":
			n, err := uintArg(c, 0, 1<<16)
			if err != nil {
				return err
			}
			r.DB = int(n)
		case "tls":
			r.TLS = true
		case "master":
			if !c.NextArg() {
				return c.ArgErr()
			}
			r.MasterName = c.Val()
		case "timeout":
			d, err := durationArg(c, time.Millisecond)
			if err != nil {
				return err
			}
			r.Timeout = d
		case "ttl":
			d, err := durationArg(c, time.Second)
			if err != nil {
				return err
			}
			r.TTL = d
		default:
			return c.Errf("redis: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["redis"]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil // validated with the rest of the location config
}

// emptySecret reports a header value with no secret in it: empty, or an
// Authorization scheme without its credentials ("Bearer ").
func emptySecret(name, v string) bool {
	if strings.EqualFold(name, "Authorization") {
		return len(strings.Fields(v)) < 2
	}
	return strings.TrimSpace(v) == ""
}

// secretName reports a URL query parameter that carries a credential.
func secretName(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"key", "token", "secret", "pass", "auth"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func parseOnline(c *caddyfile.Dispenser) (*locate.OnlineConfig, error) {
	if !c.NextArg() {
		return nil, c.Err("online: URL is required")
	}
	on := &locate.OnlineConfig{URL: c.Val(), Headers: http.Header{}}
	if u, err := url.Parse(on.URL); err == nil {
		for k, vs := range u.Query() {
			if secretName(k) && (len(vs) == 0 || vs[0] == "") {
				return nil, c.Errf("online: URL query parameter %s is empty (is its environment variable unset?)", k)
			}
		}
	}
	err := subBlock(c, func() error {
		switch c.Val() {
		case "header":
			if !c.NextArg() {
				return c.Err("online: header NAME VALUE")
			}
			name := c.Val()
			if !c.NextArg() {
				return c.Err("online: header NAME VALUE")
			}
			if emptySecret(name, c.Val()) { // {$VAR} of an unset variable: the API would answer 401
				return c.Errf("online: header %s is empty (is its environment variable unset?)", name)
			}
			on.Headers.Add(name, c.Val())
		case "timeout":
			d, err := durationArg(c, time.Millisecond)
			if err != nil {
				return err
			}
			on.Timeout = d
		case "max_qps":
			f, err := floatArg(c, 0.001, 1e6)
			if err != nil {
				return err
			}
			on.MaxQPS = f
		case "breaker":
			n, err := uintArg(c, 1, 1<<20)
			if err != nil {
				return err
			}
			d, err := durationArg(c, time.Millisecond)
			if err != nil {
				return err
			}
			on.BreakerFailures, on.BreakerWindow = int(n), d
		case "format":
			if !c.NextArg() {
				return c.ArgErr()
			}
			on.Format = c.Val()
		default:
			return c.Errf("online: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["online"]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return on, nil // validated with the rest of the location config
}

// subBlock runs prop for each property of a block that opens with "{" at
// the end of the current line, and does nothing when there is none. The
// dispenser's NextBlock can't do this inside the gslb block: it would take
// the enclosing block's next line for a property of ours.
func subBlock(c *caddyfile.Dispenser, prop func() error) error {
	if !c.NextArg() {
		return nil
	}
	if c.Val() != "{" {
		return c.Errf("unexpected argument %q", c.Val())
	}
	return blockBody(c, prop)
}

// blockBody is subBlock after its opening brace.
func blockBody(c *caddyfile.Dispenser, prop func() error) error {
	for c.Next() {
		if c.Val() == "}" {
			return noArgs(c)
		}
		if err := prop(); err != nil {
			return err
		}
		if c.NextArg() {
			if c.Val() == "}" {
				return noArgs(c)
			}
			return c.Errf("unexpected argument %q", c.Val())
		}
	}
	return c.EOFErr()
}

func noArgs(c *caddyfile.Dispenser) error {
	if c.NextArg() {
		return c.Errf("unexpected argument %q", c.Val())
	}
	return nil
}

// weightsArg reads the score's weights in scoring's term order: the first
// three are required, a term left out weighs 0.
func weightsArg(c *caddyfile.Dispenser) (scoring.Weights, error) {
	var w scoring.Weights
	n, sum := 0, 0.0
	for ; n < len(w) && c.NextArg(); n++ {
		f, err := strconv.ParseFloat(c.Val(), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1e6 {
			return w, c.Errf("weights: %q is not a number in 0..1e6", c.Val())
		}
		w[n], sum = f, sum+f
	}
	if n < minWeights {
		return w, c.ArgErr()
	}
	if sum == 0 {
		return w, c.Err("weights: at least one weight must be positive")
	}
	return w, nil
}

// minWeights: distance, load and cost are always given; quality,
// stability and hit may follow.
const minWeights = 3

func uintArg(c *caddyfile.Dispenser, lo, hi uint64) (uint64, error) {
	name := c.Val()
	if !c.NextArg() {
		return 0, c.ArgErr()
	}
	n, err := strconv.ParseUint(c.Val(), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, c.Errf("%s: %q is not a whole number in %d..%d", name, c.Val(), lo, hi)
	}
	return n, nil
}

// precomputeArgs reads `precompute off` or `precompute SIZE [DURATION]`.
func precomputeArgs(c *caddyfile.Dispenser) (*locate.PrecomputeConfig, error) {
	args := c.RemainingArgs()
	if len(args) == 1 && args[0] == "off" {
		return &locate.PrecomputeConfig{Off: true}, nil
	}
	if len(args) == 0 || len(args) > 2 {
		return nil, c.Errf("precompute: want off, or a size and an optional duration, such as 64MiB 1m")
	}
	n, err := parseSize(c, "precompute", args[0])
	if err != nil {
		return nil, err
	}
	p := &locate.PrecomputeConfig{MaxBytes: n}
	if len(args) == 2 {
		d, err := parseDuration(c, "precompute", args[1], time.Second)
		if err != nil {
			return nil, err
		}
		p.MaxTime = d
	}
	return p, nil
}

// sizeArg reads a size of 1KiB..4GiB: bytes, or a number with KiB, MiB or GiB.
func sizeArg(c *caddyfile.Dispenser) (int64, error) {
	name := c.Val()
	if !c.NextArg() {
		return 0, c.ArgErr()
	}
	return parseSize(c, name, c.Val())
}

// parseSize is sizeArg's s, of option name.
func parseSize(c *caddyfile.Dispenser, name, arg string) (int64, error) {
	s, unit := arg, int64(1)
	for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			s, unit = n, u
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > 4<<30/unit || n*unit < 1<<10 {
		return 0, c.Errf("%s: %q is not a size in 1KiB..4GiB, such as 16MiB", name, arg)
	}
	return n * unit, nil
}

// prefixArgs reads one or more CIDRs; an address alone is its /32 (/128).
func prefixArgs(c *caddyfile.Dispenser) ([]netip.Prefix, error) {
	name := c.Val()
	args := c.RemainingArgs()
	if len(args) == 0 {
		return nil, c.ArgErr()
	}
	return prefixList(c, name, args)
}

// prefixList is prefixArgs of args, the option name's.
func prefixList(c *caddyfile.Dispenser, name string, args []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(args))
	for _, a := range args {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			addr, aerr := netip.ParseAddr(a)
			if aerr != nil {
				return nil, c.Errf("%s: %q is not a CIDR or an address", name, a)
			}
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		if p.Addr().Is4In6() {
			return nil, c.Errf("%s: %q is IPv4-mapped: write it as IPv4", name, a)
		}
		// As pins: a typo in the address must not widen or move the network.
		if p.Masked() != p {
			return nil, c.Errf("%s: %s has bits set after the prefix (the network is %s)", name, p, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}

func floatArg(c *caddyfile.Dispenser, lo, hi float64) (float64, error) {
	name := c.Val()
	if !c.NextArg() {
		return 0, c.ArgErr()
	}
	f, err := strconv.ParseFloat(c.Val(), 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, c.Errf("%s: %q is not a number in %g..%g", name, c.Val(), lo, hi)
	}
	return f, nil
}

func durationArg(c *caddyfile.Dispenser, least time.Duration) (time.Duration, error) {
	name := c.Val()
	if !c.NextArg() {
		return 0, c.ArgErr()
	}
	return parseDuration(c, name, c.Val(), least)
}

// parseDuration is durationArg's arg, of option name.
func parseDuration(c *caddyfile.Dispenser, name, arg string, least time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(arg)
	if err != nil || d < least {
		return 0, c.Errf("%s: %q is not a duration of at least %s", name, arg, least)
	}
	return d, nil
}
