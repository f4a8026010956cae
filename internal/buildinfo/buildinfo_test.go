package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFill(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name string
		set  Info // the link-time values
		bi   debug.BuildInfo
		want string
	}{
		{"our build", Info{}, debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.2.0"}, Settings: vcs},
			"gslb v1.2.0, commit abc123 (modified)"},
		{"link-time values win", Info{Version: "v1.3.0", Commit: "def456"}, debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}, Settings: vcs},
			"gslb v1.3.0, commit def456"},
		{"CoreDNS's plugin.cfg build", Info{}, debug.BuildInfo{Main: debug.Module{Path: "github.com/coredns/coredns", Version: "(devel)"}, Settings: vcs,
			Deps: []*debug.Module{{Path: Module, Version: "v1.2.0", Replace: &debug.Module{Path: "/src/gslb"}}}},
			"gslb v1.2.0 => /src/gslb, commit unknown"},
		{"nothing known", Info{}, debug.BuildInfo{Main: debug.Module{Path: "example.com/other"}}, "gslb unknown, commit unknown"},
	}
	for _, tc := range tests {
		info := tc.set
		fill(&info, &tc.bi)
		if got := finish(info).String(); got != tc.want {
			t.Errorf("Test %q: expected %q, got %q", tc.name, tc.want, got)
		}
	}
}

func TestRead(t *testing.T) {
	if info := Read(); info.Version == "" || info.Commit == "" {
		t.Errorf("Expected a version and a commit, even unknown, got %+v", info)
	}
}
