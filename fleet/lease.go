package fleet

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseScript takes or renews, for each node, one of its ARGV[3] slots
// (KEYS after the first, grouped by node): the one this member (ARGV[1])
// holds, else a free one. A slot that no lease of the fleet can be (not a
// string, without a TTL or with one beyond ARGV[2] ms, held by no member
// of KEYS[1]) is repaired first: deleted and counted. It returns 1 per
// node held, then the count repaired.
var leaseScript = redis.NewScript(`
local n = tonumber(ARGV[3])
local ttl = tonumber(ARGV[2])
local held = {}
local fixed = 0
for j = 2, #KEYS do
  local ty = redis.call('TYPE', KEYS[j])['ok']
  if ty ~= 'none' then
    local bad = ty ~= 'string'
    if not bad then
      local who = redis.call('GET', KEYS[j])
      local left = redis.call('PTTL', KEYS[j])
      bad = left < 0 or left > ttl or (who ~= ARGV[1] and not redis.call('ZSCORE', KEYS[1], who))
    end
    if bad then
      redis.call('DEL', KEYS[j])
      fixed = fixed + 1
    end
  end
end
for i = 2, #KEYS, n do
  local got = 0
  for j = i, i + n - 1 do
    if redis.call('GET', KEYS[j]) == ARGV[1] then
      redis.call('PEXPIRE', KEYS[j], ARGV[2])
      got = 1
      break
    end
  end
  if got == 0 then
    for j = i, i + n - 1 do
      if redis.call('SET', KEYS[j], ARGV[1], 'NX', 'PX', ARGV[2]) then
        got = 1
        break
      end
    end
  end
  held[#held + 1] = got
end
held[#held + 1] = fixed
return held
`)

// releaseScript deletes the leases (KEYS) this member (ARGV[1]) holds.
var releaseScript = redis.NewScript(`
for i = 1, #KEYS do
  if redis.call('TYPE', KEYS[i])['ok'] == 'string' and redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 0
`)

// leaseView is the leases of the last round; after until (nothing renewed
// them) every node is probed.
type leaseView struct {
	held  map[string]bool
	until time.Time
}

// SetNodes sets the nodes to take probe leases of.
func (f *Fleet) SetNodes(ids []string) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	f.mu.Lock()
	f.nodes = ids
	f.mu.Unlock()
}

// Probing reports whether this member should probe node: always without
// `probers`, or when the leases could not be renewed (Redis is down: every
// member probes), else when it holds one of node's leases.
func (f *Fleet) Probing(node string) bool {
	if f.cfg.Probers == 0 {
		return true
	}
	v := f.leases.Load()
	if v.held == nil || f.now().After(v.until) {
		return true
	}
	return v.held[node]
}

// leaseTTL lets a lease outlive two missed renewals at most by half a tick.
func (f *Fleet) leaseTTL() time.Duration { return 3 * f.cfg.ProbeInterval / 2 }

func (f *Fleet) leaseKeys(nodes []string) []string {
	keys := make([]string, 0, len(nodes)*f.cfg.Probers)
	for _, id := range nodes {
		base := f.keys.prefix + "lease:" + f.cfg.Vantage.String() + ":" + id + ":"
		for slot := range f.cfg.Probers {
			keys = append(keys, base+strconv.Itoa(slot))
		}
	}
	return keys
}

// leaseRound renews this member's leases while its caller reports: a
// member whose probes stopped lets its leases lapse.
func (f *Fleet) leaseRound(ctx context.Context, reported time.Time) {
	if f.cfg.Probers == 0 {
		return
	}
	f.mu.Lock()
	nodes := f.nodes
	f.mu.Unlock()
	now := f.now()
	alive := now.Sub(reported) <= 2*f.cfg.ProbeInterval || now.Sub(f.started) <= 2*f.cfg.ProbeInterval
	if len(nodes) == 0 || !alive {
		f.leases.Store(&leaseView{held: map[string]bool{}, until: now.Add(f.leaseTTL())})
		return
	}
	keys := append([]string{f.keys.members}, f.leaseKeys(nodes)...)
	res, err := leaseScript.Run(ctx, f.cfg.Client, keys, f.cfg.Member, f.leaseTTL().Milliseconds(), f.cfg.Probers).Int64Slice()
	if err != nil || len(res) != len(nodes)+1 {
		if err != nil {
			f.failed("leases", err)
		}
		return // the view lapses at its until: then every node is probed
	}
	if res[len(nodes)] > 0 {
		f.repaired(RepairedLease, int(res[len(nodes)]))
	}
	held := make(map[string]bool, len(nodes))
	for i, id := range nodes {
		if res[i] == 1 {
			held[id] = true
		}
	}
	f.leases.Store(&leaseView{held: held, until: now.Add(f.leaseTTL())})
}

// leave removes this member's heartbeat, report and leases.
func (f *Fleet) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	defer cancel()
	f.mu.Lock()
	nodes := f.nodes
	f.mu.Unlock()
	_, err := f.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, f.keys.members, f.cfg.Member)
		p.HDel(ctx, f.keys.verdicts, f.cfg.Member)
		p.HDel(ctx, f.keys.verdictsAt, f.cfg.Member)
		return nil
	})
	if err == nil && f.cfg.Probers > 0 && len(nodes) > 0 {
		err = releaseScript.Run(ctx, f.cfg.Client, f.leaseKeys(nodes), f.cfg.Member).Err()
	}
	if err != nil && err != redis.Nil {
		log.Debugf("Fleet %s: leaving: %v", f.cfg.Name, err)
	}
}
