package control

import (
	"os"
	"strings"
	"sync"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/geo"
)

// contentSerial is the SOA serial the files say: the newest modification
// time of the text files that decide answers and the newest build date of
// the databases, in Unix seconds. Instances given the same files (with
// their times, as rsync -t, cp -p and tar keep them) agree on it, and a
// file written later moves it forward.
func contentSerial(o *config.Options, db *geo.DB) uint32 {
	var newest int64
	paths := []string{o.Nodes, o.Overrides, o.Quality}
	if o.Canary != nil {
		paths = append(paths, o.Canary.File)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			newest = max(newest, fi.ModTime().Unix())
		}
	}
	if db != nil {
		for _, m := range db.Info() {
			newest = max(newest, int64(min(m.BuildEpoch, 1<<32-1)))
		}
	}
	return uint32(max(min(newest, 1<<32-1), 1))
}

// lastSerials is each block's last serial (by zones and node table) across
// Corefile reloads, so that it never goes back while the process runs.
var (
	serialsMu   sync.Mutex
	lastSerials = map[string]uint32{}
)

// nextSerial is the serial after the files were (re)loaded: the one the
// operator set, else the content's, never below the last one.
func (c *Control) nextSerial() uint32 {
	if s := c.opts.SOA.Serial; s != 0 {
		return s
	}
	key := strings.Join(c.zones, " ") + " " + c.opts.Nodes
	s := max(c.serial, contentSerial(c.opts, c.locator.DB()))
	serialsMu.Lock()
	defer serialsMu.Unlock()
	s = max(s, lastSerials[key])
	lastSerials[key] = s
	return s
}
