package config

import (
	"os"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

// TestSetupFleet: the fleet block parses through a directive's setup
// (ParseController), names its member by host and port by default, and is
// refused without a redis block.
func TestSetupFleet(t *testing.T) {
	base := "geoip city.mmdb\nasn asn.mmdb\nnodes nodes.yaml\n"
	for _, tc := range []struct{ name, input, wantErr string }{
		{"fleet", "gslb example.org {\n" + base + "redis 127.0.0.1:6379\nfleet cdn {\n vantage telecom ZJ\n probe_source 127.0.0.2\n quorum 0.5\n probers 2\n}\n}", ""},
		{"no redis", "gslb example.org {\n" + base + "fleet cdn {\n vantage telecom\n}\n}", "a redis block is required"},
		{"no vantage", "gslb example.org {\n" + base + "redis 127.0.0.1:6379\nfleet cdn\n}", "vantage CARRIER is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			dnsserver.GetConfig(c).Root = t.TempDir()
			dnsserver.GetConfig(c).Port = "1053"
			o, err := ParseController(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Expected an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unexpected error: %v", err)
			}
			host, _ := os.Hostname()
			if f := o.Fleet; f == nil || f.Name != "cdn" || f.Member != host+":1053" || f.Carrier != "telecom" {
				t.Errorf("Expected fleet cdn, member %s:1053, vantage telecom; got %+v", host, f)
			}
		})
	}
}
