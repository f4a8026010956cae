package test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDashboard loads dashboards/gslb.json as Grafana would import it and
// checks that every coredns_gslb_* name in its PromQL is a metric the
// plugin registers, and that the panels the runbook names are there.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "dashboards/gslb.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string
		Templating struct {
			List []struct{ Name, Type, Query string }
		}
		Panels []struct {
			Title      string
			Datasource struct{ Type, UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboards/gslb.json: %v", err)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Type == "datasource" && v.Query == "prometheus" && v.Name == "datasource"
	}) {
		t.Errorf("Expected a Prometheus datasource variable named datasource, got %+v", d.Templating.List)
	}

	// An instance variable scopes every panel to the chosen CoreDNS servers.
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query string }) bool {
		return v.Name == "instance" && v.Type == "query" && strings.Contains(v.Query, "label_values(coredns_gslb_") && strings.HasSuffix(v.Query, ", instance)")
	}) {
		t.Errorf("Expected a query variable named instance over the gslb series' instance label, got %+v", d.Templating.List)
	}
	selector := regexp.MustCompile(`coredns_gslb_[a-z0-9_]+(\{[^}]*\})?`)

	registered := registeredMetrics(t)
	if len(registered) < 20 {
		t.Fatalf("Expected the plugin's metrics to be registered, got %v", registered)
	}
	metric := regexp.MustCompile(`coredns_gslb_[a-z0-9_]+`)
	constDivisor := regexp.MustCompile(` / [0-9.]+$`) // a unit, never 0
	var titles []string
	used := 0
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("Panel %q: expected the datasource variable, got %+v", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("Panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			// A ratio over no traffic is NaN: its denominator keeps only
			// series above 0, so that an idle one shows no point.
			if strings.Contains(tg.Expr, " / ") && !strings.HasSuffix(tg.Expr, " > 0)") && !constDivisor.MatchString(tg.Expr) {
				t.Errorf("Panel %q: the ratio %q does not filter its denominator with > 0", p.Title, tg.Expr)
			}
			for _, sel := range selector.FindAllString(tg.Expr, -1) {
				if !strings.Contains(sel, `instance=~"$instance"`) {
					t.Errorf("Panel %q: %s is not scoped to the instance variable", p.Title, sel)
				}
			}
			names := metric.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("Panel %q: %q names no gslb metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				used++
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(registered, b) {
						base = b
					}
				}
				if !slices.Contains(registered, base) {
					t.Errorf("Panel %q: %s is not a registered metric (registered: %v)", p.Title, n, registered)
				}
			}
		}
	}
	for _, want := range []string{"Cross-province ratio", "TTFB p50 by province × carrier", "Tier mix", "Geo database age", "Online geo API",
		"Redis errors", "Nodes up and load", "Fail-open decisions", "Decision duration p99", "Policy: canary vs stable",
		"Fleet: members and sync", "Fleet: changes and verdicts by vantage", "Files on disk serving"} {
		if !slices.Contains(titles, want) {
			t.Errorf("Expected a panel %q, got %q", want, titles)
		}
	}
	if used < 10 {
		t.Errorf("Expected the panels to query at least 10 gslb series, got %d", used)
	}
}
