package locate

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/carrierlist"
)

// CarrierListConfig is the `carrier_lists` option: lists of the carriers'
// CIDRs, built from BGP, whose carrier wins over every database's.
type CarrierListConfig struct {
	Paths   []string         // files, or directories of *.txt lists
	MaxSize int64            // each file's size limit; 0 = carrierlist.DefaultMaxSize
	Set     *carrierlist.Set // the lists already read from Paths; nil: New reads them
	// Outvote lets two databases that agree on another carrier (MaxMind's
	// ASN database and the Chinese one that placed the address in China)
	// keep theirs over a list's (carrier_lists_priority agreeing_databases).
	Outvote bool
}

// carrierLists is the link before the databases. It is never final: it
// notes what the lists say of the address, and learn puts the list's
// carrier over whatever the later sources found. Overrides, which come
// first, win over it.
type carrierLists struct {
	l    *Locator
	cfg  CarrierListConfig
	sets atomic.Pointer[listSet]
}

// listSet is a Set and the Source of each of its lists.
type listSet struct {
	set     *carrierlist.Set
	sources []geo.Source
}

// listHit is what the lists say of a query's address.
type listHit struct {
	asked   bool
	found   bool
	bits    uint8  // the block the answer holds for
	carrier string // the list's carrier, before the carrier table
	source  geo.Source
	// outvoted: two databases agree on another carrier, and Outvote lets
	// them keep it.
	outvoted bool
}

func newCarrierLists(l *Locator, cfg CarrierListConfig) (*carrierLists, error) {
	if len(cfg.Paths) == 0 {
		return nil, errors.New("no list file or directory")
	}
	c := &carrierLists{l: l, cfg: cfg}
	set := cfg.Set
	if set == nil {
		var err error
		if set, err = carrierlist.Load(cfg.Paths, cfg.MaxSize); err != nil {
			return nil, err
		}
	}
	c.store(set)
	return c, nil
}

func (c *carrierLists) store(set *carrierlist.Set) {
	ls := &listSet{set: set}
	for _, l := range set.Lists() {
		ls.sources = append(ls.sources, geo.ListSource(l.Name))
	}
	c.sets.Store(ls)
	c.warnUnknown()
}

// warnUnknown says which lists name a carrier the carrier table does not
// know: their clients match no node's carrier.
func (c *carrierLists) warnUnknown() {
	carriers := c.l.carriers.Load()
	for _, l := range c.sets.Load().set.Lists() {
		if k := carriers.Carrier(0, l.Carrier); !carriers.Known(k) {
			log.Warningf("Carrier list %s: carrier %q is not one the node table knows: its clients match no node's carrier (map it in the node table's carriers:)", l.Path, k)
		}
	}
}

func (c *carrierLists) Name() string { return "carrier_list" }

func (c *carrierLists) Locate(_ context.Context, q *Query) bool {
	ls := c.sets.Load()
	i, bits, ok := ls.set.Lookup(q.Addr)
	q.list = listHit{asked: true, found: ok, bits: uint8(bits)}
	if ok {
		q.list.carrier, q.list.source = ls.set.List(i).Carrier, ls.sources[i]
		listHitCount.Inc()
	} else {
		listMiss.Inc()
	}
	return false
}

// Trace reports the list that holds the address, if any.
func (c *carrierLists) Trace(ctx context.Context, q *Query, done bool, carriers *geo.Carriers) ([]Step, bool) {
	if done {
		return nil, true
	}
	c.Locate(ctx, q)
	if !q.list.found {
		return nil, false
	}
	loc := geo.Location{ISP: carriers.Carrier(0, q.list.carrier), Bits: q.list.bits, Source: q.list.source}
	return []Step{{Source: q.list.source.String(), Location: loc, Found: true}}, false
}

// applyList puts the list's carrier over q.Loc's, which the carrier table
// mapped already, and bounds the scope by the lists' block either way.
func applyList(q *Query, carriers *geo.Carriers) {
	h := q.list
	if !h.asked {
		return
	}
	q.Loc.Bits = max(q.Loc.Bits, h.bits)
	if h.found && !h.outvoted {
		q.Loc.ISP = carriers.Carrier(0, h.carrier)
		q.Loc.Source = h.source
		// The databases measured another place: cut to spread_prefix.
		q.Loc.SpreadBits = 0
	}
}

// Files are the lists' paths, directories too (adding a list changes
// its directory), and the files read from them.
func (c *carrierLists) Files() []string {
	files := append([]string(nil), c.cfg.Paths...)
	for _, l := range c.sets.Load().set.Lists() {
		files = append(files, l.Path)
	}
	return files
}

// Reopen reads the lists again; on an error (a *ConfigError) the old ones
// keep serving.
func (c *carrierLists) Reopen() error {
	set, err := carrierlist.Load(c.cfg.Paths, c.cfg.MaxSize)
	if err != nil {
		return &ConfigError{"carrier_lists", err}
	}
	c.store(set)
	c.l.retag()
	return nil
}

// CarrierLists is the carrier lists the chain reads now; nil: none.
func (l *Locator) CarrierLists() *carrierlist.Set {
	if l.lists == nil {
		return nil
	}
	return l.lists.sets.Load().set
}
