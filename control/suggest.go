package control

import (
	"slices"

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
	best, bd := "", -1
	for _, k := range slices.Compact(ids) {
		if d := distance(id, k); bd < 0 || d < bd {
			best, bd = k, d
		}
	}
	if bd < 0 || bd > max(1, len(id)/4) {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

// distance is the edit distance of a and b, by bytes: node ids are
// short, and the table's check keeps them printable.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
