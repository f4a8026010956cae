package health

import (
	"slices"
	"testing"
)

// The kinds' keys: each is declared once, probe_defaults fills it only for
// its kinds, and the other kinds reject it by name.
func TestKindKeys(t *testing.T) {
	declared := map[string]bool{}
	for _, k := range kindKeys {
		declared[k.name] = true
		if takers(k.name) == "" {
			t.Errorf("Key %s is taken by no kind", k.name)
		}
	}
	for name, k := range kinds {
		for _, key := range append(slices.Clone(k.keys), k.ignores...) {
			if !declared[key] {
				t.Errorf("Kind %s names key %s, which is not in kindKeys", name, key)
			}
		}
	}
	tests := []struct {
		spec Spec
		want string // "" means no error
	}{
		{Spec{Type: TypeTCP, Address: "a:1", URL: "http://a/"}, "probe.url: only for http and https probes"},
		{Spec{Type: TypeTCP, Address: "a:1", LoadField: "load"}, "probe.load_field: only for http and https probes"},
		{Spec{Type: TypeHTTPS, URL: "https://a/", Address: "a:1"}, "probe.address: only for tcp probes, use probe.url"},
		{Spec{Type: TypeTCP, Address: "a:1", Host: "www.example.org", ExpectStatus: []int{200}}, ""},
	}
	for _, tc := range tests {
		err := tc.spec.WithDefaults(Spec{}).Validate()
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.spec, err, tc.want)
		}
	}

	// A new kind that takes address gets it from probe_defaults, and
	// rejects the http keys, with nothing written for them.
	k := kind{keys: []string{"address"}, validate: func(Spec) error { return nil }}
	s := Spec{Type: "test"}
	k.defaults(&s, Spec{Address: "a:1", URL: "http://a/", LoadField: "load"})
	if s.Address != "a:1" || s.URL != "" || s.LoadField != "" {
		t.Errorf("Defaults of a test probe: %+v; want only the address a:1", s)
	}
	if err, want := k.check(Spec{Address: "a:1", ExpectBody: "ok"}), "probe.expect_body: only for http and https probes"; err == nil || err.Error() != want {
		t.Errorf("A test probe with expect_body: %v, want %q", err, want)
	}
}
