package config

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// stateKey is the key of a state file in Unique: its absolute, cleaned
// path with symbolic links resolved (those of its directory when the file
// does not exist yet), so that two spellings of one file are one key.
func stateKey(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		p = filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	return "state " + p
}

// sameStateFile is the line of an earlier block whose state file is path
// under another name (a hard link), if one is.
func sameStateFile(seen Unique, path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	for k, line := range seen {
		other, ok := strings.CutPrefix(k, "state ")
		if !ok {
			continue
		}
		if ofi, err := os.Stat(other); err == nil && os.SameFile(fi, ofi) {
			return line, true
		}
	}
	return 0, false
}

// addrKeys are the keys of an admin address in Unique: the port, and the
// host as an address in canonical form (localhost is the loopback
// addresses it listens on). A wildcard host (empty, 0.0.0.0, ::) claims
// the port on every address.
func addrKeys(addr string) (own string, wild string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "admin " + addr, ""
	}
	wild = "admin *:" + port
	switch a, err := netip.ParseAddr(host); {
	case host == "":
		return wild, wild
	case err == nil && a.IsUnspecified():
		return wild, wild
	case err == nil:
		return "admin " + net.JoinHostPort(a.Unmap().WithZone(a.Zone()).String(), port), wild
	case strings.EqualFold(host, "localhost"):
		return "admin " + net.JoinHostPort("127.0.0.1", port), wild
	}
	return "admin " + net.JoinHostPort(strings.ToLower(host), port), wild
}

// addrClash is the line of an earlier block whose admin address is addr's
// (or that listens on addr's port on every address, or addr does), if one
// is.
func addrClash(seen Unique, addr string) (int, bool) {
	own, wild := addrKeys(addr)
	if line, dup := seen[own]; dup {
		return line, true
	}
	if line, dup := seen[wild]; dup {
		return line, true
	}
	if own != wild {
		return 0, false
	}
	_, port, _ := net.SplitHostPort(addr)
	for k, line := range seen {
		if rest, ok := strings.CutPrefix(k, "admin "); ok {
			if _, p, err := net.SplitHostPort(rest); err == nil && p == port {
				return line, true
			}
		}
	}
	return 0, false
}

// addrKey is addr's key in Unique.
func addrKey(addr string) string {
	own, _ := addrKeys(addr)
	return own
}
