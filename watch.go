package gslb

import (
	"crypto/sha256"
	"fmt"
	"os"
	"time"

	"github.com/gslbdns/gslb/table"
)

// watcher tells which watched files changed. A change counts once the file
// looked the same on two checks in a row, so that a file read while it is
// being written is never loaded.
type watcher struct {
	nodes        string
	tableHash    [32]byte // the loaded node table's
	pendingTable [32]byte
	candidate    [32]byte // the content tableChanged returned last
	rejected     [32]byte // the last node table rejected
	dbs          []string
	stamps       map[string]fileStamp // the loaded databases'
	pending      map[string]fileStamp
	lastErr      map[string]string
}

func newWatcher(nodes string, hash [32]byte, dbs []string) *watcher {
	w := &watcher{nodes: nodes, tableHash: hash, dbs: dbs, stamps: map[string]fileStamp{},
		pending: map[string]fileStamp{}, lastErr: map[string]string{}}
	for _, p := range dbs {
		w.stamps[p] = stamp(p)
	}
	return w
}

// fileStamp tells a changed database file: geoipupdate and mmdbgen write a
// new file and rename it, which changes the inode even within one mtime tick.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stamp(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}
}

// tableChanged returns the node table's content when it changed and
// settled. The file is small, so its content is compared: a same-size
// rewrite can keep the modification time.
func (w *watcher) tableChanged() []byte {
	data, err := os.ReadFile(w.nodes)
	if err != nil {
		w.accept(w.nodes, nil, fmt.Errorf("node table: %w", err))
		return nil
	}
	h := sha256.Sum256(data)
	switch {
	case h == w.tableHash || h == w.rejected:
		w.pendingTable = [32]byte{}
		return nil
	case h != w.pendingTable:
		w.pendingTable = h
		return nil
	}
	w.pendingTable, w.candidate = [32]byte{}, h
	return data
}

// dbsChanged reports whether a database file changed and settled.
func (w *watcher) dbsChanged() bool {
	changed := false
	for _, p := range w.dbs {
		s := stamp(p)
		switch {
		case s == w.stamps[p]:
			delete(w.pending, p)
		case s != w.pending[p]:
			w.pending[p] = s
		default:
			delete(w.pending, p)
			w.stamps[p] = s
			changed = true
		}
	}
	return changed
}

// accept records a load's outcome: a loaded table's hash, or an error
// logged once per distinct message and counted.
func (w *watcher) accept(path string, t *table.Table, err error) bool {
	if err == nil {
		delete(w.lastErr, path)
		if t != nil {
			w.tableHash = t.Hash
		}
		return true
	}
	if path == w.nodes {
		w.rejected = w.candidate
	}
	reloads.WithLabelValues("error").Inc()
	if msg := err.Error(); w.lastErr[path] != msg {
		w.lastErr[path] = msg
		log.Errorf("Rejected reload, keeping the previous version: %v", err)
	}
	return false
}
