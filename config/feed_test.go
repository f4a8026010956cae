package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseFeed(t *testing.T) {
	const admin = "admin 127.0.0.1:9154\n"
	tests := []struct {
		name, block string
		check       func(*Options) bool
		wantErr     string
	}{
		{"defaults", admin + "feed {\nsource hz { \ntoken_file hz.token\nnodes hz-*\n}\n}", func(o *Options) bool {
			f := o.Feed
			return f.Cycle == time.Minute && f.HalfLife == time.Minute && f.MaxAge == 10*time.Minute && f.MinSamples == 100 &&
				f.Hysteresis == 0.25 && f.MaxRows == 10000 && f.MaxBody == 4<<20 && len(f.Sources) == 1 &&
				f.Sources[0].Name == "hz" && f.Sources[0].Rate == 1000 && f.Sources[0].Nodes[0] == "hz-*" &&
				f.Sources[0].TokenFile == "hz.token" && o.Params.MaxErrorRate == 0.2
		}, ""},
		{"everything", admin + "max_error_rate 0.05\nfeed {\ncycle 10s\nhalf_life 30s\nmax_age 5m\nmin_samples 20\nhysteresis 0.1\nmax_rows 500\nmax_body 1MiB\n" +
			"source hz {\ntoken_file hz.token\nnodes hz-* sh-1\nrate 50\n}\nsource bj {\ntoken_file bj.token\nnodes bj-*\n}\n}", func(o *Options) bool {
			f := o.Feed
			return f.Cycle == 10*time.Second && f.HalfLife == 30*time.Second && f.MaxAge == 5*time.Minute && f.MinSamples == 20 &&
				f.Hysteresis == 0.1 && f.MaxRows == 500 && f.MaxBody == 1<<20 && len(f.Sources) == 2 &&
				len(f.Sources[0].Nodes) == 2 && f.Sources[0].Rate == 50 && o.Params.MaxErrorRate == 0.05
		}, ""},
		{"no admin", "feed {\nsource hz {\ntoken_file t\nnodes hz-*\n}\n}", nil, "feed at line 4: an admin block is required"},
		{"no source", admin + "feed {\ncycle 10s\n}", nil, "feed: at least one source"},
		{"no token", admin + "feed {\nsource hz {\nnodes hz-*\n}\n}", nil, "feed: source hz: token_file FILE is required"},
		{"no nodes", admin + "feed {\nsource hz {\ntoken_file t\n}\n}", nil, "feed: source hz: nodes GLOB... is required"},
		{"bad glob", admin + "feed {\nsource hz {\ntoken_file t\nnodes hz-[\n}\n}", nil, `feed: source hz: nodes: "hz-["`},
		{"twice", admin + "feed {\nsource hz {\ntoken_file t\nnodes a\n}\nsource hz {\ntoken_file u\nnodes b\n}\n}", nil, "a second source of that name, first at line 6"},
		{"unknown", admin + "feed {\nwindow 5s\n}", nil, `feed: unknown property "window"`},
		{"unknown in source", admin + "feed {\nsource hz {\ntoken t\n}\n}", nil, `feed: source hz: unknown property "token"`},
		{"cycle short", admin + "feed {\ncycle 1ms\n}", nil, `cycle: "1ms" is not a duration of at least 100ms`},
		{"hysteresis", admin + "feed {\nhysteresis 2\n}", nil, `hysteresis: "2" is not a number in 0..1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseBlock("gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + tc.block + "\n}")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			if !tc.check(o) {
				t.Errorf("Unexpected options for %q: %+v", tc.block, o.Feed)
			}
		})
	}
}
