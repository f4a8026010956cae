package policy

import (
	"hash/maphash"
	"math"
	"sync/atomic"

	"github.com/gslbdns/gslb/scoring"
	"github.com/gslbdns/gslb/table"

	"github.com/miekg/dns"
)

// Cache keeps prepared decisions: the ladder and the scores of a
// record's nodes for a client's location, which every subnet of that
// location shares; a subnet then only picks among the contenders. An entry
// holds for one view: a health, load, table or database change builds a
// new view, and the old view's entries are no longer read. It is safe for
// concurrent use, and reads take no lock.
type Cache struct {
	slots []atomic.Pointer[cached]
	gen   atomic.Uint64
}

// cacheSlots bounds the cache: distinct locations times records seen in
// one view.
const cacheSlots = 1 << 14

type cached struct {
	gen    uint64
	hash   uint64
	rec    *table.Record
	qtype  uint16
	client scoring.Client
	prep   *scoring.Prepared
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{slots: make([]atomic.Pointer[cached], cacheSlots)}
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

func (c *Cache) get(gen, h uint64, rec *table.Record, qtype uint16, cl *scoring.Client) *scoring.Prepared {
	for k := range uint64(probes) {
		e := c.slots[(h+k)&(cacheSlots-1)].Load()
		if e != nil && e.gen == gen && e.hash == h && e.rec == rec && e.qtype == qtype && e.client == *cl {
			return e.prep
		}
	}
	return nil
}

func (c *Cache) put(gen, h uint64, rec *table.Record, qtype uint16, cl *scoring.Client, p *scoring.Prepared) {
	e := &cached{gen: gen, hash: h, rec: rec, qtype: qtype, client: *cl, prep: p}
	victim := &c.slots[h&(cacheSlots-1)]
	for k := range uint64(probes) {
		s := &c.slots[(h+k)&(cacheSlots-1)]
		if old := s.Load(); old == nil || old.gen != gen {
			if s.CompareAndSwap(old, e) {
				return
			}
		}
	}
	victim.Store(e)
}

// WarmMax is the most decisions worth preparing ahead for one view: half
// the cache, so that queries of other clients still find room.
const WarmMax = cacheSlots / 2

// Warm prepares the decisions of every record and family for clients, in
// their order, into v's generation of the cache, until it has prepared
// limit of them, stop closes or current says v is no longer served: a
// query of such a client then picks from them. It returns how many of
// them the cache holds, prepared now or before. Decisions that are made per subnet (a node shedding) are not
// cached, and not prepared.
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
				if v.cache.get(v.gen, h, rec, qt, cl) == nil && v.prepare(&q, cand, h).PerSubnet() {
					continue
				}
				n++
			}
		}
	}
	return n
}
