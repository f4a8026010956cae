package gslb

import (
	"crypto/sha256"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/scoring"
)

// view is the immutable snapshot the query path reads: the node table with
// the probes' latest verdicts folded in.
type view struct {
	t      *table
	nodes  []scoring.Node // t.nodes with live load and health
	states []string       // per node: up, down, unknown, or unprobed
	serial uint32
}

func newView(t *table, snap *health.Snapshot, serial uint32) *view {
	v := &view{t: t, nodes: make([]scoring.Node, len(t.nodes)), states: make([]string, len(t.nodes)), serial: serial}
	for i := range t.nodes {
		v.nodes[i] = t.nodes[i].Node
		v.states[i] = "unprobed"
		if snap == nil {
			continue
		}
		st, ok := snap.Status(t.nodes[i].ID)
		if !ok {
			continue
		}
		v.states[i] = st.State.String()
		v.nodes[i].Down = st.State == health.StateDown
		if st.HasLoad {
			v.nodes[i].Load = st.Load
		}
	}
	return v
}

// runtime is what one plugin instance runs: the published view, the
// locator, the probes and the file watcher. Its mutex guards only the
// background side; queries read the view atomically.
type runtime struct {
	view    atomic.Pointer[view]
	locator *locate.Locator
	refines bool // redis or online may refine a location per /24

	mu       sync.Mutex
	opts     options
	zones    []string
	table    *table
	db       *geo.DB
	checker  *health.Checker
	serial   uint32
	files    map[string]fileStamp // databases' stamps
	rejected [32]byte             // hash of the last node table rejected
	lastErr  map[string]string
	// A changed file is loaded only once it looked the same on two checks
	// in a row, so that a file read mid-write is never published.
	pendingTable [32]byte
	pendingFiles map[string]fileStamp

	startOnce, stopOnce sync.Once
	stopCh              chan struct{}
	done                chan struct{}
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

// init loads everything a query needs; it starts no goroutine. On error,
// line is the Corefile line of the option whose file failed.
func (g *GSLB) init(o options) (line int, err error) {
	g.opts = o
	t, err := loadTable(o.nodes, g.Zones, o.ttl)
	if err != nil {
		return o.nodesLine, err
	}
	db, err := geo.Open(o.geoip, o.asn, t.carriers)
	if err != nil {
		return o.geoipLine, err
	}
	loc, err := locate.New(locate.Config{DB: db, CacheSize: o.cacheSize, CacheTTL: o.cacheTTL, Redis: o.redis, Online: o.online})
	if err != nil {
		db.Close()
		return o.geoipLine, err
	}
	rt := &runtime{
		locator: loc,
		refines: o.redis != nil || o.online != nil,
		opts:    o,
		zones:   g.Zones,
		table:   t,
		db:      db,
		serial:  uint32(time.Now().Unix()),
		files:   map[string]fileStamp{},
		lastErr: map[string]string{},

		pendingFiles: map[string]fileStamp{},
		stopCh:       make(chan struct{}),
		done:         make(chan struct{}),
	}
	for _, p := range rt.dbFiles() {
		rt.files[p] = stamp(p)
	}
	rt.checker = rt.newChecker(t)
	rt.publish()
	g.rt = rt
	recordDBInfo(db)
	return 0, nil
}

func (rt *runtime) dbFiles() []string {
	p := []string{rt.opts.geoip}
	if rt.opts.asn != "" {
		p = append(p, rt.opts.asn)
	}
	return p
}

// newChecker returns a checker on the process's probe pool, which keeps
// the verdicts of unchanged probes across node table and Corefile reloads.
func (rt *runtime) newChecker(t *table) *health.Checker {
	var c *health.Checker
	c = health.Shared().NewChecker(t.probes, func(*health.Snapshot) {
		recovery.Do("publish", func() {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if rt.checker == c {
				rt.publish()
			}
		})
	})
	return c
}

// publish builds and stores a new view. Callers hold rt.mu, or own rt alone.
func (rt *runtime) publish() {
	rt.view.Store(newView(rt.table, rt.checker.Snapshot(), rt.serial))
}

func (g *GSLB) start() error {
	rt := g.rt
	rt.startOnce.Do(func() {
		rt.locator.Start()
		rt.mu.Lock()
		rt.checker.Start()
		rt.mu.Unlock()
		go rt.watch()
	})
	return nil
}

func (g *GSLB) stop() error {
	rt := g.rt
	rt.stopOnce.Do(func() {
		close(rt.stopCh)
		rt.startOnce.Do(func() { close(rt.done) }) // never started: nothing to wait for
		<-rt.done
		rt.mu.Lock()
		c := rt.checker
		rt.mu.Unlock()
		c.Stop()
		rt.locator.Close()
		rt.mu.Lock()
		rt.db.Close()
		rt.mu.Unlock()
	})
	return nil
}

// watch reloads the node table and the databases when their files change.
func (rt *runtime) watch() {
	defer close(rt.done)
	if rt.opts.reload == 0 {
		<-rt.stopCh
		return
	}
	tick := time.NewTicker(rt.opts.reload)
	defer tick.Stop()
	for {
		select {
		case <-rt.stopCh:
			return
		case <-tick.C:
			recovery.Do("reload", rt.reloadChanged)
		}
	}
}

// reloadChanged parses changed files outside the lock and swaps them in. A
// bad file is rejected and the previous one keeps serving.
func (rt *runtime) reloadChanged() {
	t := rt.table
	if nt := rt.changedTable(); nt != nil {
		t = nt
	}
	dbChanged := false
	for _, p := range rt.dbFiles() {
		s := stamp(p)
		switch {
		case s == rt.files[p]:
			delete(rt.pendingFiles, p)
		case s != rt.pendingFiles[p]:
			rt.pendingFiles[p] = s // settle first
		default:
			delete(rt.pendingFiles, p)
			rt.files[p] = s
			dbChanged = true
		}
	}
	var db *geo.DB
	if dbChanged || t.carrierSig != rt.table.carrierSig {
		d, err := geo.Open(rt.opts.geoip, rt.opts.asn, t.carriers)
		switch {
		case rt.accept(rt.opts.geoip, err):
			db = d
			recordDBInfo(d)
		case t.carrierSig != rt.table.carrierSig:
			t = rt.table // its carriers need the database it can't open
		}
	}
	if t == rt.table && db == nil {
		return
	}

	old, oldDB := rt.swap(t, db)
	reloads.WithLabelValues("ok").Inc()
	if old != nil {
		old.Stop()
	}
	if oldDB != nil {
		oldDB.Close()
	}
}

// swap publishes a new table and database (either may be the current one)
// and returns what they replace.
func (rt *runtime) swap(t *table, db *geo.DB) (old *health.Checker, oldDB *geo.DB) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if t != rt.table {
		// DeepEqual follows the spec's pointers, which fmt would print as addresses.
		if !reflect.DeepEqual(t.probes, rt.table.probes) {
			old = rt.checker
			rt.checker = rt.newChecker(t)
			rt.checker.Start()
		}
		forgetNodes(rt.table, t)
		rt.table = t
		rt.serial = max(rt.serial+1, uint32(time.Now().Unix()))
		log.Infof("Reloaded node table %s: %d nodes, %d records", t.path, len(t.nodes), len(t.records))
	}
	if db != nil {
		oldDB, rt.db = rt.db, db
		rt.locator.SetDB(db)
		log.Infof("Reloaded geo databases %s %s", rt.opts.geoip, rt.opts.asn)
	}
	rt.publish()
	return old, oldDB
}

// changedTable returns the node table if its content changed and is valid.
// The file is small, so its content is compared: a same-size rewrite can
// keep the modification time.
func (rt *runtime) changedTable() *table {
	path := rt.opts.nodes
	data, err := os.ReadFile(path)
	if err != nil {
		rt.accept(path, fmt.Errorf("node table: %w", err))
		return nil
	}
	h := sha256.Sum256(data)
	if h == rt.table.hash || h == rt.rejected {
		rt.pendingTable = [32]byte{}
		return nil
	}
	if h != rt.pendingTable {
		rt.pendingTable = h // settle first
		return nil
	}
	rt.pendingTable = [32]byte{}
	t, err := tableFrom(path, data, rt.zones, rt.opts.ttl)
	if !rt.accept(path, err) {
		rt.rejected = h
		return nil
	}
	return t
}

// accept logs a failed reload once per distinct error and counts it.
func (rt *runtime) accept(path string, err error) bool {
	if err == nil {
		delete(rt.lastErr, path)
		return true
	}
	reloads.WithLabelValues("error").Inc()
	if msg := err.Error(); rt.lastErr[path] != msg {
		rt.lastErr[path] = msg
		log.Errorf("Rejected reload, keeping the previous version: %v", err)
	}
	return false
}
