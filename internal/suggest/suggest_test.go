package suggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"ttl", "ttl", 0}, {"tll", "ttl", 1}, {"provnce", "province", 1},
		{"record", "records", 1}, {"expect_bdy", "expect_body", 1}, {"telcom", "telecom", 1},
		{"hz-telcom", "hz-telecom", 1}, {"ab", "ba", 1}, {"cernet", "cstnet", 2}, {"电信", "电", 1},
	}
	for _, tc := range tests {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	keys := []string{"nodes", "records", "nameservers", "neighbors", "regions", "carriers", "probe_defaults"}
	tests := []struct {
		w, want string
		ok      bool
	}{
		{"record", "records", true},
		{"Records", "records", true}, // case is no typo
		{"nodess", "nodes", true},
		{"probe_defualts", "probe_defaults", true}, // a swap is one edit
		{"nameserver", "nameservers", true},
		{"regons", "regions", true},
		{"zones", "", false}, // two edits from nodes: a short word, not a typo
		{"x", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := Nearest(tc.w, keys)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Nearest(%q) = %q, %t, want %q, %t", tc.w, got, ok, tc.want, tc.ok)
		}
	}
	// Of equally close words the first wins.
	if got, _ := Nearest("tx", []string{"ta", "tb"}); got != "ta" {
		t.Errorf("Nearest of a tie: %q, want the first", got)
	}
}

func TestHint(t *testing.T) {
	if got := Hint("tll", []string{"ttl", "answers"}); got != " (did you mean ttl?)" {
		t.Errorf("Hint: %q", got)
	}
	if got := Hint("bogus", []string{"ttl", "answers"}); got != "" {
		t.Errorf("Hint of no typo: %q", got)
	}
}
