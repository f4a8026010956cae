package config

import (
	"strings"
	"testing"
	"time"

	"github.com/gslbdns/gslb/resolvers"
)

func TestParseResolvers(t *testing.T) {
	const feedBlock = "admin 127.0.0.1:9154\nfeed {\nsource e {\ntoken_file t\nnodes *\n}\n}\n"
	tests := []struct {
		name, block string
		check       func(*resolvers.Config) bool
		wantErr     string
	}{
		{"defaults", "resolvers", func(c *resolvers.Config) bool {
			return c.Population && c.Beacon == "" && c.MaxResolvers == resolvers.DefaultMaxResolvers && c.Window == resolvers.DefaultWindow
		}, ""},
		{"off", "resolvers {\npopulation off\n}", func(c *resolvers.Config) bool { return !c.Population }, ""},
		{"everything", feedBlock + "resolvers {\nbeacon B.Example.org\nkey_file k\nbeacon_ttl 5\nwindow 2m\nhalf_life 1h\nmax_resolvers 500\n" +
			"min_samples 10\nsource_joins 50\ncycle 1s\npopulation on\n}", func(c *resolvers.Config) bool {
			return c.Beacon == "b.example.org." && strings.HasSuffix(c.KeyFile, "k") && c.TTL == 5 && c.Window == 2*time.Minute &&
				c.HalfLife == time.Hour && c.MaxResolvers == 500 && c.MinSamples == 10 && c.SourceJoins == 50 && c.Cycle == time.Second && c.Population
		}, ""},
		{"beacon without key", feedBlock + "resolvers {\nbeacon b.example.org\n}", nil, "a beacon needs key_file FILE"},
		{"beacon without feed", "resolvers {\nbeacon b.example.org\nkey_file k\n}", nil, "a beacon needs a feed block"},
		{"population typo", "resolvers {\npopulation maybe\n}", nil, `population is on or off, not "maybe"`},
		{"unknown", "resolvers {\nbeacons b.example.org\n}", nil, `resolvers: unknown property "beacons" (did you mean beacon?)`},
		{"ttl", "resolvers {\nbeacon_ttl 0\n}", nil, "beacon_ttl"},
		{"extra", "resolvers {\nwindow 1m 2m\n}", nil, `resolvers: unexpected argument "2m"`},
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
			if o.Resolvers == nil || !tc.check(o.Resolvers) {
				t.Errorf("Unexpected options for %q: %+v", tc.block, o.Resolvers)
			}
		})
	}
}
