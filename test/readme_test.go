package test

import (
	"os"
	"strings"
	"testing"

	"github.com/gslbdns/gslb"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/control"
	"github.com/gslbdns/gslb/feed"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/resolvers"
	"github.com/gslbdns/gslb/sign"

	"github.com/prometheus/client_golang/prometheus"
)

// registeredMetrics lists the names of every metric the plugin's packages
// declare, from their lists of collectors.
func registeredMetrics(t *testing.T) []string {
	t.Helper()
	var cs []prometheus.Collector
	for _, l := range [][]prometheus.Collector{gslb.Collectors, canary.Collectors, control.Collectors, feed.Collectors, health.Collectors, locate.Collectors, recovery.Collectors, resolvers.Collectors, sign.Collectors} {
		cs = append(cs, l...)
	}
	names, err := testsupport.MetricNames(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestREADMEMetrics: every metric the plugin registers is documented.
func TestREADMEMetrics(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, name := range registeredMetrics(t) {
		if !strings.Contains(readme, "`"+name+"{") && !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("Metric %s is not documented in the README's Metrics section", name)
		}
	}
}
