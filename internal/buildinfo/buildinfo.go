// Package buildinfo names the gslb build a binary carries: the plugin's
// version and the commit it was built from.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Module is the plugin's module path.
const Module = "github.com/gslbdns/gslb"

// Version and Commit may be set at link time (make build does, from git
// describe and git rev-parse):
//
//	-ldflags "-X github.com/gslbdns/gslb/internal/buildinfo.Version=v1.2.3 -X github.com/gslbdns/gslb/internal/buildinfo.Commit=abc1234"
//
// Left empty, they come from the module and VCS data Go embeds.
var (
	Version string
	Commit  string
)

// Info is the plugin's version and commit, "unknown" for what the binary
// does not say.
type Info struct {
	Version, Commit string
	Modified        bool // built from a work tree with uncommitted changes
}

// Read returns the build's Info: the link-time values first, then the
// embedded build info. In CoreDNS built from its own plugin.cfg the plugin
// is a dependency, and its module version is the version.
func Read() Info {
	info := Info{Version: Version, Commit: Commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fill(&info, bi)
	}
	return finish(info)
}

// finish names what is still unknown.
func finish(info Info) Info {
	if info.Version == "" {
		info.Version = "unknown"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

func fill(info *Info, bi *debug.BuildInfo) {
	mod := &bi.Main
	if mod.Path != Module {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == Module {
				mod = d
				break
			}
		}
	}
	if mod == nil {
		return
	}
	if info.Version == "" && mod.Version != "" {
		info.Version = mod.Version
		if mod.Replace != nil {
			info.Version += " => " + mod.Replace.Path
		}
	}
	if mod != &bi.Main || info.Commit != "" {
		return // vcs settings describe the main module only
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
}

// String is the line the binaries print for -version.
func (i Info) String() string {
	s := fmt.Sprintf("gslb %s, commit %s", i.Version, i.Commit)
	if i.Modified {
		s += " (modified)"
	}
	return s
}
