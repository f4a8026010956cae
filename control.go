package gslb

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/health"
	"github.com/gslbdns/gslb/internal/recovery"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/policy"
	"github.com/gslbdns/gslb/table"
)

// control is one plugin instance's control plane: it builds the views that
// queries read from the node table, the probes' verdicts and the
// parameters, and keeps them current as files change and probes report.
// Its mutex guards only this background side; queries load the view.
type control struct {
	view    atomic.Pointer[policy.View]
	locator *locate.Locator

	mu      sync.Mutex
	opts    options
	zones   []string
	table   *table.Table
	db      *geo.DB
	checker *health.Checker
	serial  uint32
	files   *watcher

	startOnce, stopOnce sync.Once
	stopCh              chan struct{}
	done                chan struct{}
}

// newControl loads everything a query needs and starts no goroutine. On
// error, option is the Corefile option whose file or settings failed.
func newControl(o options, zones []string) (c *control, option string, err error) {
	t, err := table.Load(o.nodes, zones, o.ttl)
	if err != nil {
		return nil, "nodes", err
	}
	db, err := geo.Open(o.geoip, o.asn)
	if err != nil {
		return nil, "geoip", err
	}
	loc, err := locate.New(locate.Config{DB: db, Carriers: t.Carriers, CacheSize: o.cacheSize, CacheTTL: o.cacheTTL,
		Redis: o.redis, Online: o.online})
	if err != nil {
		option = "geoip"
		if ce := (*locate.ConfigError)(nil); errors.As(err, &ce) && ce.Layer != "cache" {
			option = ce.Layer
		}
		return nil, option, err
	}
	c = &control{
		locator: loc,
		opts:    o,
		zones:   zones,
		table:   t,
		db:      db,
		serial:  uint32(time.Now().Unix()),
		files:   newWatcher(o.nodes, t.Hash, dbFiles(o)),
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	c.checker = c.newChecker(t)
	c.publish(c.checker.Snapshot())
	recordDBInfo(db)
	return c, "", nil
}

func dbFiles(o options) []string {
	if o.asn == "" {
		return []string{o.geoip}
	}
	return []string{o.geoip, o.asn}
}

// newChecker returns a checker on the process's probe pool, which keeps
// the verdicts of unchanged probes across node table and Corefile reloads.
func (c *control) newChecker(t *table.Table) *health.Checker {
	var ch *health.Checker
	ch = health.Shared().NewChecker(t.Probes, func(s *health.Snapshot) {
		recovery.Do("publish", func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.checker == ch {
				c.publish(s)
			}
		})
	})
	return ch
}

// publish builds and stores the view of the current table with snap's
// verdicts. Callers hold c.mu, or own c alone.
func (c *control) publish(snap *health.Snapshot) {
	c.view.Store(policy.NewView(c.table, snap, &c.opts.params, c.serial))
}

func (c *control) start() error {
	c.startOnce.Do(func() {
		c.locator.Start()
		c.mu.Lock()
		c.checker.Start()
		c.publish(c.checker.Snapshot())
		c.mu.Unlock()
		go c.watch()
	})
	return nil
}

func (c *control) stop() error {
	c.stopOnce.Do(func() {
		close(c.stopCh)
		c.startOnce.Do(func() { close(c.done) }) // never started: nothing to wait for
		<-c.done
		c.mu.Lock()
		ch := c.checker
		c.mu.Unlock()
		ch.Stop()
		c.locator.Close()
	})
	return nil
}

// watch reloads the node table and the databases when their files change.
func (c *control) watch() {
	defer close(c.done)
	if c.opts.reload == 0 {
		<-c.stopCh
		return
	}
	tick := time.NewTicker(c.opts.reload)
	defer tick.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case <-tick.C:
			recovery.Do("reload", c.reload)
		}
	}
}

// reload loads the files that changed and settled, outside the lock, and
// swaps them in. A bad file is rejected and the previous one keeps serving.
func (c *control) reload() {
	var t *table.Table
	if data := c.files.tableChanged(); data != nil {
		nt, err := table.Parse(c.opts.nodes, data, c.zones, c.opts.ttl)
		if c.files.accept(c.opts.nodes, nt, err) {
			t = nt
		}
	}
	var db *geo.DB
	if c.files.dbsChanged() {
		d, err := geo.Open(c.opts.geoip, c.opts.asn)
		if c.files.accept(c.opts.geoip, nil, err) {
			db = d
			recordDBInfo(d)
		}
	}
	if t == nil && db == nil {
		return
	}
	if old := c.swap(t, db); old != nil {
		old.Stop()
	}
	reloads.WithLabelValues("ok").Inc()
}

// swap publishes a new table and databases (nil: unchanged) and returns the
// checker it replaced, for the caller to stop outside the lock.
func (c *control) swap(t *table.Table, db *geo.DB) (old *health.Checker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != nil {
		change := t.Diff(c.table)
		if change&table.ChangeProbes != 0 {
			old = c.checker
			c.checker = c.newChecker(t)
			c.checker.Start()
		}
		if change&table.ChangeCarriers != 0 {
			c.locator.SetCarriers(t.Carriers)
		}
		forgetNodes(c.table, t)
		c.table = t
		c.serial = max(c.serial+1, uint32(time.Now().Unix()))
		log.Infof("Reloaded node table %s (%s changed): %d nodes, %d records", t.Path, change, len(t.Nodes), len(t.Records))
	}
	if db != nil {
		c.db = db
		c.locator.SetDB(db)
		log.Infof("Reloaded geo databases %s %s", c.opts.geoip, c.opts.asn)
	}
	c.publish(c.checker.Snapshot())
	return old
}
