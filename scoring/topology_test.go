package scoring

import (
	"slices"
	"testing"
)

func TestDefaultTopologySymmetric(t *testing.T) {
	topo := DefaultTopology()
	if len(topo.neighbors) != 34 {
		t.Fatalf("Expected 34 provinces with neighbours, got %d", len(topo.neighbors))
	}
	for k, ns := range topo.neighbors {
		for _, n := range ns {
			if n == k.Province {
				t.Errorf("Province %s lists itself", k.Province)
			}
			if !topo.Neighbors(k.Country, n, k.Province) {
				t.Errorf("Neighbours not symmetric: %s lists %s but not back", k.Province, n)
			}
		}
	}
}

func TestDefaultTopologyRegions(t *testing.T) {
	topo := DefaultTopology()
	all := []string{"BJ", "TJ", "HE", "SX", "NM", "LN", "JL", "HL", "SH", "JS", "ZJ", "AH", "FJ", "JX", "SD", "HA", "HB", "HN",
		"GD", "GX", "HI", "CQ", "SC", "GZ", "YN", "XZ", "SN", "GS", "QH", "NX", "XJ", "TW", "HK", "MO"}
	if len(all) != 34 || len(topo.region) != 34 {
		t.Fatalf("Expected 34 provinces in regions, got %d", len(topo.region))
	}
	for _, p := range all {
		if topo.Region("CN", p) == "" {
			t.Errorf("Province %s has no region", p)
		}
		if len(topo.neighborsOf("CN", p)) == 0 {
			t.Errorf("Province %s has no neighbours", p)
		}
	}
	tests := []struct {
		country, province, want string
	}{
		{"CN", "BJ", "华北"},
		{"CN", "HL", "东北"},
		{"CN", "ZJ", "华东"},
		{"CN", "TW", "华东"},
		{"CN", "HB", "华中"},
		{"CN", "HK", "华南"},
		{"CN", "MO", "华南"},
		{"CN", "XZ", "西南"},
		{"CN", "XJ", "西北"},
		{"CN", "", ""},
		{"CN", "XX", ""},
		{"US", "CA", ""},
	}
	for _, tc := range tests {
		if got := topo.Region(tc.country, tc.province); got != tc.want {
			t.Errorf("Region(%s, %s) = %q, want %q", tc.country, tc.province, got, tc.want)
		}
	}
}

func TestDefaultTopologyNeighbors(t *testing.T) {
	topo := DefaultTopology()
	zj := slices.Clone(topo.neighborsOf("CN", "ZJ"))
	slices.Sort(zj)
	if want := []string{"AH", "FJ", "JS", "JX", "SH"}; !slices.Equal(zj, want) {
		t.Errorf("ZJ neighbours = %v, want %v", zj, want)
	}
	tests := []struct {
		country, a, b string
		want          bool
	}{
		{"CN", "ZJ", "SH", true},
		{"CN", "ZJ", "BJ", false},
		{"CN", "ZJ", "ZJ", false},
		{"CN", "HI", "GD", true},
		{"CN", "HI", "GX", true},
		{"CN", "TW", "FJ", true},
		{"CN", "HK", "GD", true},
		{"CN", "MO", "GD", true},
		{"CN", "HK", "MO", false},
		{"CN", "NM", "HL", true},
		{"CN", "XZ", "XJ", true},
		{"US", "ZJ", "SH", false},
		{"CN", "", "SH", false},
	}
	for _, tc := range tests {
		if got := topo.Neighbors(tc.country, tc.a, tc.b); got != tc.want {
			t.Errorf("Neighbors(%s, %s, %s) = %v, want %v", tc.country, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestOverride(t *testing.T) {
	base := DefaultTopology()
	o := base.Override(
		map[ProvinceKey][]string{
			{"CN", "ZJ"}: {"SH"},
			{"DE", "BY"}: {"BW", "HE"},
		},
		map[string]map[string][]string{
			"CN": {"华东": {"SH", "JS", "ZJ", "HA"}},
			"US": {"west": {"CA", "OR"}},
		},
	)
	neighbors := []struct {
		topo          *Topology
		country, a, b string
		want          bool
	}{
		{o, "CN", "ZJ", "SH", true},
		{o, "CN", "ZJ", "JS", false}, // replaced, not merged
		{o, "CN", "JS", "ZJ", true},  // other entries untouched
		{o, "DE", "BY", "BW", true},  // added
		{o, "DE", "BW", "BY", false}, // directional
		{base, "CN", "ZJ", "JS", true},
		{base, "DE", "BY", "BW", false},
	}
	for i, tc := range neighbors {
		if got := tc.topo.Neighbors(tc.country, tc.a, tc.b); got != tc.want {
			t.Errorf("Test %d: Neighbors(%s, %s, %s) = %v, want %v", i, tc.country, tc.a, tc.b, got, tc.want)
		}
	}
	regions := []struct {
		topo             *Topology
		country, p, want string
	}{
		{o, "CN", "ZJ", "华东"},
		{o, "CN", "HA", "华东"}, // moved
		{o, "CN", "HB", "华中"}, // stayed
		{o, "CN", "AH", ""},   // dropped from the replaced list
		{o, "CN", "GD", "华南"},
		{o, "US", "CA", "west"},
		{base, "CN", "HA", "华中"},
		{base, "CN", "AH", "华东"},
		{base, "US", "CA", ""},
	}
	for i, tc := range regions {
		if got := tc.topo.Region(tc.country, tc.p); got != tc.want {
			t.Errorf("Test %d: Region(%s, %s) = %q, want %q", i, tc.country, tc.p, got, tc.want)
		}
	}
	if got := o.members["CN"]["华中"]; !slices.Equal(got, []string{"HB", "HN"}) {
		t.Errorf("华中 members = %v, want [HB HN]", got)
	}
	if got := base.members["CN"]["华中"]; !slices.Equal(got, []string{"HA", "HB", "HN"}) {
		t.Errorf("Base 华中 members changed: %v", got)
	}

	// A second override moves a province on again.
	o2 := o.Override(nil, map[string]map[string][]string{"CN": {"华中": {"HA", "HB", "HN", "AH"}}})
	for p, want := range map[string]string{"HA": "华中", "AH": "华中", "ZJ": "华东"} {
		if got := o2.Region("CN", p); got != want {
			t.Errorf("Second override: Region(CN, %s) = %q, want %q", p, got, want)
		}
	}
	if got := o2.members["CN"]["华东"]; !slices.Equal(got, []string{"SH", "JS", "ZJ"}) {
		t.Errorf("Second override: 华东 members = %v, want [SH JS ZJ]", got)
	}

	var nilTopo *Topology
	if got := nilTopo.Override(map[ProvinceKey][]string{{"CN", "A"}: {"B"}}, nil); !got.Neighbors("CN", "A", "B") {
		t.Errorf("Override of a nil topology lost its entry")
	}
}
