package test

import (
	"strconv"
	"testing"

	"github.com/miekg/dns"
)

// TestMetadata reads the decision labels back from a log plugin line.
func TestMetadata(t *testing.T) {
	logs := captureLog(t)
	// precompute off: with the table, a /24 it places is answered from it
	// ("db") and never from the cache ("lru") that the second query reads.
	s := startServer(t, demoCorefile(t, "precompute off"))
	// "*" = any value but "-"; numbers are checked apart.
	tests := []struct {
		name  string
		ecs   string
		want  map[string]string
		maxKm float64 // distance_km must be in 0..maxKm; -1 = "-"
	}{
		{"hangzhou first", "202.101.172.0/24", map[string]string{
			"client": "202.101.172.0", "client_source": "ecs", "ecs": "202.101.172.0/24/24",
			"country": "CN", "province": "ZJ", "city": "Hangzhou", "isp": "telecom", "asn": "4134",
			"tier": "province_isp", "candidates": "1", "node": "hz-telecom", "node_state": "unprobed",
			"geo_source": "db",
		}, 50},
		{"hangzhou again", "202.101.172.0/24", map[string]string{
			"client": "202.101.172.0", "province": "ZJ", "node": "hz-telecom", "geo_source": "lru",
		}, 50},
		{"beijing", "202.106.0.0/24", map[string]string{
			"client": "202.106.0.0", "client_source": "ecs", "ecs": "202.106.0.0/24/24",
			"country": "CN", "province": "BJ", "city": "Beijing", "isp": "unicom", "asn": "4808",
			"tier": "province_isp", "node": "bj-unicom", "geo_source": "db",
		}, 50},
		{"xian to a neighbour", "218.30.19.0/24", map[string]string{
			"province": "SN", "isp": "telecom", "tier": "neighbor_isp", "node": "cd-telecom",
		}, 1000},
		{"no ecs", "", map[string]string{
			"client": "127.0.0.1", "client_source": "remote", "ecs": "-", "country": "-",
			"province": "-", "asn": "-", "geo_source": "none", "node": "*", "tier": "*",
		}, -1},
		{"ecs too coarse", "202.101.0.0/16", map[string]string{
			"client": "127.0.0.1", "client_source": "remote", "ecs": "202.101.0.0/16/0",
			"geo_source": "none", "node": "*",
		}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, got := queryLabels(t, s, logs, newQuery(t, "www.example.org", dns.TypeA, tc.ecs))
			if len(r.Answer) == 0 {
				t.Fatalf("No answer")
			}
			if got["rcode"] != "NOERROR" {
				t.Errorf("Logged rcode %q, want NOERROR", got["rcode"])
			}
			for k, want := range tc.want {
				v, ok := got["gslb/"+k]
				switch {
				case !ok:
					t.Errorf("Label gslb/%s missing from the log line", k)
				case want == "*" && (v == "-" || v == ""):
					t.Errorf("Label gslb/%s = %q, want a value", k, v)
				case want != "*" && v != want:
					t.Errorf("Label gslb/%s = %q, want %q", k, v, want)
				}
			}
			score, err := strconv.ParseFloat(got["gslb/score"], 64)
			if err != nil || score <= 0 || score > 1 {
				t.Errorf("Label gslb/score = %q, want a number in (0, 1]", got["gslb/score"])
			}
			if n, err := strconv.Atoi(got["gslb/candidates"]); err != nil || n < 1 {
				t.Errorf("Label gslb/candidates = %q, want a positive number", got["gslb/candidates"])
			}
			km := got["gslb/distance_km"]
			if tc.maxKm < 0 {
				if km != "-" {
					t.Errorf("Label gslb/distance_km = %q, want - (distance played no part)", km)
				}
				return
			}
			if d, err := strconv.ParseFloat(km, 64); err != nil || d < 0 || d > tc.maxKm {
				t.Errorf("Label gslb/distance_km = %q, want 0..%g", km, tc.maxKm)
			}
		})
	}
}
