package control

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/geo/carrierlist"
	"github.com/gslbdns/gslb/locate"
	"github.com/gslbdns/gslb/overrides"
	"github.com/gslbdns/gslb/quality"
	"github.com/gslbdns/gslb/table"
)

// What an instance loaded, for one info line at startup and one per
// reload: an operator sees which files and databases serve, and how much
// of each, without the metrics.

// loadedLine is the startup line: everything the instance serves from.
// Callers hold c.mu, or own c alone.
func (c *Control) loadedLine() string {
	parts := []string{describeDB(c.locator.DB(), nil), describeTable("node table", c.table, "")}
	if set := c.locator.CarrierLists(); set != nil {
		parts = append(parts, describeLists(set))
	}
	if c.overrides != nil {
		parts = append(parts, describeOverrides(c.opts.Overrides, c.overrides))
	}
	if c.quality != nil {
		parts = append(parts, describeQuality(c.opts.Quality, c.quality))
	}
	if cn := c.canary.Load(); cn != nil {
		parts = append(parts, describeCanary(cn))
	}
	if a := c.opts.Admin; a != nil {
		parts = append(parts, describeAdmin(a))
	}
	if r := c.opts.Redis; r != nil {
		parts = append(parts, describeRedis(r))
	}
	return "Loaded " + strings.Join(parts, "; ") + c.zonesSuffix()
}

// reloadedLine names only what a reload changed.
func (c *Control) reloadedLine(parts []string) string {
	return "Reloaded " + strings.Join(parts, "; ") + c.zonesSuffix()
}

func (c *Control) zonesSuffix() string { return " (gslb " + strings.Join(c.zones, " ") + ")" }

// describeDB names each database with its type and build date: those at
// paths, or every one when paths is nil.
func describeDB(db *geo.DB, paths []string) string {
	var parts []string
	for _, m := range db.Info() {
		if paths != nil && !slices.Contains(paths, m.Path) {
			continue
		}
		built := "build date unknown"
		if m.BuildEpoch > 0 {
			built = "built " + time.Unix(int64(m.BuildEpoch), 0).UTC().Format(time.DateOnly)
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s, %s)", geo.FormatOf(m.Kind).Option, m.Path, m.DatabaseType, built))
	}
	return strings.Join(parts, ", ")
}

// describeTable counts a node table's nodes and records; change, when
// set, says which parts a reload changed.
func describeTable(what string, t *table.Table, change string) string {
	if change != "" {
		change = " (" + change + " changed)"
	}
	probed := ""
	if n := len(t.Probes); n > 0 {
		probed = fmt.Sprintf(" (%d probed)", n)
	}
	return fmt.Sprintf("%s %s%s: %s%s, %s", what, t.Path, change, count(len(t.Nodes), "node", "nodes"), probed, count(len(t.Records), "record", "records"))
}

// describeAdmin names the admin API's address, whether it wants a token,
// and where its changes are kept.
func describeAdmin(a *admin.Config) string {
	token, state := "token required", "state "+a.State
	if a.Token == "" {
		token = "no token"
	}
	if a.State == "" {
		state = "no state file: changes last until a restart"
	}
	return fmt.Sprintf("admin API %s (%s, %s)", a.Addr, token, state)
}

// describeRedis names the Redis servers the location cache uses.
func describeRedis(r *locate.RedisConfig) string {
	s := "redis " + strings.Join(r.Addrs, ", ")
	if r.MasterName != "" {
		s += " (sentinels of " + r.MasterName + ")"
	}
	return s
}

// describeLists counts the carrier lists, their ranges and the networks
// several carriers list, which the databases decide.
func describeLists(set *carrierlist.Set) string {
	return "carrier_lists: " + count(len(set.Lists()), "list", "lists") + ", " + count(set.Ranges(), "range", "ranges") +
		", " + count(set.Shared(), "network", "networks") + " in several carriers' lists (the databases decide there)"
}

func describeOverrides(path string, ov *overrides.Table) string {
	return fmt.Sprintf("overrides %s: %s", path, count(ov.Len(), "entry", "entries"))
}

func describeQuality(path string, qm *quality.Matrix) string {
	return fmt.Sprintf("quality %s: %s", path, count(len(qm.Rows), "row", "rows"))
}

// count is n with its noun in the singular or the plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func describeCanary(cn *canary.Rollout) string {
	return fmt.Sprintf("%s, %g%% of the subnets", describeTable("canary node table", cn.Table, ""), cn.Percent())
}
