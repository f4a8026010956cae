package policy

import (
	"hash/maphash"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Cache keeps prepared decisions: the ladder and the scores of a
// record's nodes for a client's location, which every subnet of that
// location shares; a subnet then only picks among the contenders. An entry
// holds for one view: a health, load, table or database change builds a
// new view, and the old view's entries are no longer read. It is safe for
// concurrent use, and reads take no lock. Its slots are sized by Reserve
// for the decisions warmed ahead, and swapped whole.
type Cache struct {
	slots atomic.Pointer[slotTable]
	gen   atomic.Uint64
}

// slotTable is the slots, a power of two of them, and their mask.
type slotTable struct {
	mask uint64
	s    []atomic.Pointer[cached]
}

func newSlots(n int) *slotTable {
	return &slotTable{mask: uint64(n - 1), s: make([]atomic.Pointer[cached], n)}
}

// cacheSlots is the fewest slots: distinct locations times records seen
// in one view, without a warm-up.
const cacheSlots = 1 << 14

type cached struct {
	gen    uint64
	hash   uint64
	rec    *table.Record
	qtype  uint16
	client scoring.Client
	prep   *scoring.Prepared
	ahead  bool // prepared by a warm-up, not for a query
	// asked: a query read it; with !ahead, the client is one the queries
	// ask for (Recent).
	asked atomic.Bool
}

// NewCache returns an empty cache of the fewest slots.
func NewCache() *Cache {
	c := &Cache{}
	c.slots.Store(newSlots(cacheSlots))
	return c
}

// Slots is how many decisions the cache has room for.
func (c *Cache) Slots() int { return len(c.slots.Load().s) }

// DecisionBytes is what one prepared decision of v takes on the heap,
// its slots and entry included: its contenders and order grow with the
// nodes. Fit to `go run ./bench/gen precompute`: 1,339 bytes each with
// the 93-node table and GeoLite2-City's clients, 2,579 with 930 nodes
// and 1,000 records.
func (v *View) DecisionBytes() int64 { return 1200 + 2*int64(len(v.Nodes)) }

// Reserve gives the cache room for n decisions of each bytes within
// maxBytes: twice as many slots, so that a key's probes find room, a power
// of two, at least the fewest. A new size drops every entry (the warm-up
// that asked refills them) and swaps in the slots without a lock. It
// returns how many decisions are worth warming: half the slots.
func (c *Cache) Reserve(n int, maxBytes, each int64) int {
	fit := uint64(max(maxBytes/max(each, 1), 1))
	most := max(cacheSlots, 1<<(bits.Len64(2*fit)-1)) // half of them ready within maxBytes
	want := cacheSlots
	for want < 2*n && want < most {
		want *= 2
	}
	if want != c.Slots() {
		c.slots.Store(newSlots(want))
	}
	return want / 2
}

// next starts a generation, for a new view.
func (c *Cache) next() uint64 {
	if c == nil {
		return 0
	}
	return c.gen.Add(1)
}

var seed = maphash.MakeSeed()

func hashKey(rec *table.Record, qtype uint16, cl *scoring.Client) uint64 {
	h := maphash.String(seed, rec.Name) ^ uint64(qtype)<<48
	h = mixIn(h, maphash.String(seed, cl.Country))
	h = mixIn(h, maphash.String(seed, cl.Province))
	h = mixIn(h, maphash.String(seed, cl.ISP))
	h = mixIn(h, math.Float64bits(cl.Lat))
	h = mixIn(h, math.Float64bits(cl.Lon))
	if cl.HasCoords {
		h ^= 1
	}
	if cl.ProvinceLevel {
		h ^= 2
	}
	return h
}

func mixIn(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	return h
}

// probes is how many slots a key may take.
const probes = 4

func (c *Cache) get(gen, h uint64, rec *table.Record, qtype uint16, cl *scoring.Client) *cached {
	t := c.slots.Load()
	for k := range uint64(probes) {
		e := t.s[(h+k)&t.mask].Load()
		if e != nil && e.gen == gen && e.hash == h && e.rec == rec && e.qtype == qtype && e.client == *cl {
			return e
		}
	}
	return nil
}

func (c *Cache) put(gen, h uint64, rec *table.Record, qtype uint16, cl *scoring.Client, p *scoring.Prepared, ahead bool) {
	e := &cached{gen: gen, hash: h, rec: rec, qtype: qtype, client: *cl, prep: p, ahead: ahead}
	t := c.slots.Load()
	victim := &t.s[h&t.mask]
	for k := range uint64(probes) {
		s := &t.s[(h+k)&t.mask]
		if old := s.Load(); old == nil || old.gen != gen {
			if s.CompareAndSwap(old, e) {
				return
			}
		}
	}
	victim.Store(e)
}

// WarmMax is the most decisions worth preparing ahead for one view in a
// cache of the fewest slots: half of them, so that queries of other
// clients still find room.
const WarmMax = cacheSlots / 2

// The bounds of one view's warm-up: the memory of the decisions it keeps
// ready (Reserve's bound) and the time it takes.
const (
	WarmBytes = 32 << 20
	WarmTime  = 10 * time.Second
)

// PerClient is how many decisions a client has in v: one per record and
// family with a node of that family.
func (v *View) PerClient() int {
	n := 0
	for _, rec := range v.Table.Records {
		for _, qt := range [2]uint16{dns.TypeA, dns.TypeAAAA} {
			if len(candidates(rec, qt)) > 0 {
				n++
			}
		}
	}
	return n
}

// Recent are the distinct clients that queries asked for since v (the
// view last warmed): whose decisions of v's generation or a later one the
// cache holds because a query prepared or read them. A later view's
// warm-up prepares them first, and between the warm-ups of all the
// databases' clients, them alone.
func (v *View) Recent() []scoring.Client {
	if v == nil || v.cache == nil {
		return nil
	}
	seen := map[scoring.Client]bool{}
	var out []scoring.Client
	slots := v.cache.slots.Load().s
	for i := range slots {
		if e := slots[i].Load(); e != nil && e.gen >= v.gen && (!e.ahead || e.asked.Load()) && !seen[e.client] {
			seen[e.client] = true
			out = append(out, e.client)
		}
	}
	return out
}

// Sweep drops the decisions of generations before v's from its cache,
// once a warm-up has read what it needs of them: until a put replaced
// them they stayed, a view's worth of decisions more for the collector to
// mark on the queries' CPU. It returns how many it dropped.
func (v *View) Sweep() int {
	if v == nil || v.cache == nil {
		return 0
	}
	n := 0
	slots := v.cache.slots.Load().s
	for i := range slots {
		if e := slots[i].Load(); e != nil && e.gen < v.gen && slots[i].CompareAndSwap(e, nil) {
			n++
		}
	}
	return n
}

// Held is how many decisions v's generation of the cache holds.
func (v *View) Held() int {
	if v.cache == nil {
		return 0
	}
	n := 0
	slots := v.cache.slots.Load().s
	for i := range slots {
		if e := slots[i].Load(); e != nil && e.gen == v.gen {
			n++
		}
	}
	return n
}

// Warm prepares the decisions of every record and family for clients, in
// their order, into v's generation of the cache, until it has prepared
// limit of them, stop closes or current says no (v is no longer served,
// or its warm-up's time is up): a query of such a client then picks from
// them. It returns how many of them the cache holds, prepared now or
// before. Decisions that are made per subnet (a node shedding) are not
// cached, and not prepared. It takes no lock: queries of v decide beside
// it, and a query that prepares a decision first keeps it.
func (v *View) Warm(clients []scoring.Client, limit int, stop <-chan struct{}, current func() bool) int {
	if v.cache == nil {
		return 0
	}
	n, k := 0, 0
	for i := range clients {
		cl := &clients[i]
		for _, name := range v.Table.Names {
			rec := v.Table.Records[name]
			for _, qt := range [2]uint16{dns.TypeA, dns.TypeAAAA} {
				if k++; k&63 == 1 {
					select {
					case <-stop:
						return n
					default:
					}
					if !current() {
						return n
					}
				}
				if n >= limit {
					return n
				}
				q := Query{Record: rec, QType: qt, Client: *cl}
				cand := candidates(rec, qt)
				if len(cand) == 0 || v.shed(cand) {
					continue
				}
				h := hashKey(rec, qt, cl)
				if v.cache.get(v.gen, h, rec, qt, cl) == nil && v.prepare(&q, cand, h, true).PerSubnet() {
					continue
				}
				n++
			}
		}
	}
	return n
}
