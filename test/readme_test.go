package test

import (
	"os"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/metricset"
)

// TestREADMEMetrics: every metric the plugin registers is documented.
func TestREADMEMetrics(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, name := range metricset.Names() {
		if !strings.Contains(readme, "`"+name+"{") && !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("Metric %s is not documented in the README's Metrics section", name)
		}
	}
}
