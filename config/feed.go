package config

import (
	"time"

	"github.com/coredns/caddy/caddyfile"

	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/internal/suggest"
)

// parseFeed reads `feed { cycle D; half_life D; max_age D; min_samples N;
// hysteresis F; max_rows N; max_body SIZE; source NAME { token_file F;
// nodes GLOB...; rate N } }`. The token files are read when the block
// loads.
func parseFeed(c *caddyfile.Dispenser, path func(string) string) (*feed.Config, error) {
	fc := feed.DefaultConfig()
	fc.Line = c.Line()
	names := map[string]int{}
	err := subBlock(c, func() error {
		var err error
		switch c.Val() {
		case "cycle":
			fc.Cycle, err = durationArg(c, 100*time.Millisecond) // tests fold fast
		case "half_life":
			fc.HalfLife, err = durationArg(c, 0)
		case "max_age":
			fc.MaxAge, err = durationArg(c, time.Second)
		case "min_samples":
			var n uint64
			n, err = uintArg(c, 0, 1e9)
			fc.MinSamples = float64(n)
		case "hysteresis":
			fc.Hysteresis, err = floatArg(c, 0, 1)
		case "max_rows":
			var n uint64
			n, err = uintArg(c, 1, 1e6)
			fc.MaxRows = int(n)
		case "max_body":
			fc.MaxBody, err = sizeArg(c)
		case "source":
			var s feed.Source
			s, err = parseSource(c, path)
			if err == nil {
				if l, dup := names[s.Name]; dup {
					return c.Errf("feed: source %s: a second source of that name, first at line %d", s.Name, l)
				}
				names[s.Name] = s.Line
				fc.Sources = append(fc.Sources, s)
			}
			return err
		default:
			return c.Errf("feed: unknown property %q%s", c.Val(), suggest.Hint(c.Val(), properties["feed"]))
		}
		if err != nil {
			return err
		}
		if args := c.RemainingArgs(); len(args) != 0 {
			return c.Errf("feed: unexpected argument %q", args[0])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(fc.Sources) == 0 {
		return nil, c.Err("feed: at least one source NAME { token_file FILE; nodes GLOB... } is required")
	}
	return &fc, nil
}

// parseSource reads `source NAME { token_file FILE; nodes GLOB...; rate N }`.
func parseSource(c *caddyfile.Dispenser, path func(string) string) (feed.Source, error) {
	s := feed.Source{Line: c.Line(), Rate: feed.DefaultRate}
	if !c.NextArg() || c.Val() == "{" {
		return s, c.Err("feed: source NAME is required")
	}
	s.Name = c.Val()
	err := subBlock(c, func() error {
		switch c.Val() {
		case "token_file":
			if !c.NextArg() {
				return c.ArgErr()
			}
			s.TokenFile = path(c.Val())
		case "nodes":
			globs := c.RemainingArgs()
			if len(globs) == 0 {
				return c.ArgErr()
			}
			if err := feed.CheckGlobs(globs); err != nil {
				return c.Errf("feed: source %s: %v", s.Name, err)
			}
			s.Nodes = append(s.Nodes, globs...)
			return nil
		case "rate":
			n, err := uintArg(c, 1, 1e7)
			if err != nil {
				return err
			}
			s.Rate = float64(n)
		default:
			return c.Errf("feed: source %s: unknown property %q%s", s.Name, c.Val(), suggest.Hint(c.Val(), properties["source"]))
		}
		if args := c.RemainingArgs(); len(args) != 0 {
			return c.Errf("feed: source %s: unexpected argument %q", s.Name, args[0])
		}
		return nil
	})
	switch {
	case err != nil:
		return s, err
	case s.TokenFile == "":
		return s, c.Errf("feed: source %s: token_file FILE is required", s.Name)
	case len(s.Nodes) == 0:
		return s, c.Errf("feed: source %s: nodes GLOB... is required (the nodes it may report on)", s.Name)
	}
	return s, nil
}
