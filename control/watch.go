package control

import (
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gslbdns/gslb/internal/yamlfile"
)

// watcher tells which watched files changed. A change counts once the file
// looked the same on two checks in a row, so that a file read while it is
// being written is never loaded. Small files (the node table, the
// overrides) are compared by content: a same-size rewrite can keep the
// modification time. Databases are compared by modification time, size
// and inode: geoipupdate and mmdbgen write a new file and rename it, which
// changes the inode even within one mtime tick.
type watcher struct {
	texts   map[string]*textState
	stamps  map[string]fileStamp // the loaded databases'
	pending map[string]fileStamp
	dbs     []string
	lastErr map[string]string
	limit   int64 // each text file's size limit
	// bad are the files whose content on disk was rejected: the previous
	// version serves.
	bad map[string]bool
	// served are the files whose file_ok series this instance holds,
	// from Start to Stop.
	served []string
}

type textState struct {
	loaded, pending, candidate, rejected [32]byte
}

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

// newWatcher watches the text files (path -> hash of the loaded content)
// and the databases.
func newWatcher(texts map[string][32]byte, dbs []string, limit int64) *watcher {
	w := &watcher{texts: map[string]*textState{}, stamps: map[string]fileStamp{},
		pending: map[string]fileStamp{}, dbs: dbs, lastErr: map[string]string{}, limit: limit,
		bad: map[string]bool{}}
	for p, h := range texts {
		w.texts[p] = &textState{loaded: h}
	}
	for _, p := range dbs {
		w.stamps[p] = stamp(p)
	}
	return w
}

// textChanged returns path's content when it changed and settled.
func (w *watcher) textChanged(path string) []byte {
	st := w.texts[path]
	data, err := yamlfile.ReadFile(path, w.limit)
	if err != nil {
		w.fail(path, err)
		return nil
	}
	h := sha256.Sum256(data)
	switch {
	case h == st.loaded:
		st.pending = [32]byte{}
		w.good(path) // the serving version is back on disk
		return nil
	case h == st.rejected:
		st.pending = [32]byte{}
		return nil
	case h != st.pending:
		st.pending = h
		return nil
	}
	st.pending, st.candidate = [32]byte{}, h
	return data
}

// loaded records that path's content from textChanged is in use.
func (w *watcher) loaded(path string) {
	if st := w.texts[path]; st != nil {
		st.loaded = st.candidate
	}
	delete(w.lastErr, path)
	w.good(path)
}

// rejected records that path's content from textChanged failed.
func (w *watcher) rejected(path string, err error) {
	if st := w.texts[path]; st != nil {
		st.rejected = st.candidate
	}
	w.fail(path, err)
}

// reloadText parses path's content once it changed and settled. ok is
// false when it did not change, or when parse rejected it: the previous
// content keeps serving.
func reloadText[T any](w *watcher, path string, parse func([]byte) (T, error)) (v T, ok bool) {
	data := w.textChanged(path)
	if data == nil {
		return v, false
	}
	v, err := parse(data)
	if err != nil {
		w.rejected(path, err)
		return v, false
	}
	w.loaded(path)
	return v, true
}

// dbsChanged is the database files that changed and settled.
func (w *watcher) dbsChanged() (changed []string) {
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
			changed = append(changed, p)
		}
	}
	return changed
}

// watchDBs replaces the databases' list after a reload (a list directory
// may have gained a file). A new path's stamp is unknown: it may have
// changed since the reload read it, so it counts as changed once settled,
// at the cost of one more reload.
func (w *watcher) watchDBs(dbs []string) {
	for _, p := range dbs {
		if _, ok := w.stamps[p]; !ok {
			w.stamps[p] = fileStamp{}
		}
	}
	w.dbs = dbs
	if w.served != nil {
		old := w.served
		w.serve()
		releaseFiles(old)
	}
}

// dbsFailed records that the databases in paths were rejected.
func (w *watcher) dbsFailed(paths []string, option string, err error) {
	for _, p := range paths {
		w.markBad(p)
	}
	w.fail(option, err)
}

// dbsLoaded records that the watched databases are the ones serving.
func (w *watcher) dbsLoaded() {
	for _, p := range w.dbs {
		w.good(p)
	}
}

// markBad records that path on disk is not the version serving.
func (w *watcher) markBad(path string) {
	w.bad[path] = true
	if slices.Contains(w.served, path) {
		fileOK.WithLabelValues(path).Set(0)
	}
}

// good records that path on disk is the version serving, and says so
// when it was rejected before: the operator's all-clear.
func (w *watcher) good(path string) {
	if !w.bad[path] {
		return
	}
	delete(w.bad, path)
	delete(w.lastErr, path)
	if slices.Contains(w.served, path) {
		fileOK.WithLabelValues(path).Set(1)
	}
	log.Infof("In service again: %s, the file on disk is the one serving", path)
}

// files are the watched files: the text files and the databases.
func (w *watcher) files() []string {
	files := slices.Clone(w.dbs)
	for p := range w.texts {
		files = append(files, p)
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// serve exports file_ok for the watched files while the instance serves.
func (w *watcher) serve() {
	w.served = w.files()
	acquireFiles(w.served, w.bad)
}

// unserve drops this instance's hold on the file_ok series.
func (w *watcher) unserve() {
	releaseFiles(w.served)
	w.served = nil
}

// fail counts a rejected reload and logs it once per distinct message.
func (w *watcher) fail(path string, err error) {
	if _, text := w.texts[path]; text {
		w.markBad(path)
	}
	reloads.WithLabelValues("error").Inc()
	if msg := err.Error(); w.lastErr[path] != msg {
		w.lastErr[path] = msg
		log.Errorf("Rejected reload, keeping the previous version: %v", err)
	}
}

// readFile reads one of the watched files; an error says which (kind).
// A file over limit bytes is refused before it is read.
func readFile(kind, path string, limit int64) ([]byte, error) {
	data, err := yamlfile.ReadFile(path, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return data, nil
}
