package control

import (
	"slices"

	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/table"
)

// nodeHint is " (did you mean "ID"?)" for the node id of t, or of the
// canary's candidate, closest to a mistyped id, when one is close enough
// to be a typo of it; "" otherwise. Callers hold c.mu.
func (c *Control) nodeHint(id string) string {
	var ids []string
	add := func(t *table.Table) {
		for _, n := range t.Nodes {
			ids = append(ids, n.ID)
		}
	}
	add(c.table)
	if cn := c.canary.Load(); cn != nil {
		add(cn.Table)
	}
	slices.Sort(ids)
	best, ok := suggest.Nearest(id, slices.Compact(ids))
	if !ok || best == id {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}
