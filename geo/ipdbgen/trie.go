package ipdbgen

import "net/netip"

// trie is the binary trie over IPv6 addresses. A child is 0 when empty, a
// node index when positive (the root, 0, is nobody's child), and -(offset+1)
// of a record otherwise.
type trie struct {
	nodes [][2]int
}

// insert must see containing networks before the networks inside them.
func (t *trie) insert(p netip.Prefix, recOff int) {
	if t.nodes == nil {
		t.nodes = [][2]int{{}}
	}
	a := p.Addr().As16()
	n := 0
	for i := range p.Bits() - 1 {
		b := bitAt(a, i)
		c := t.nodes[n][b]
		if c <= 0 {
			// Empty, or a shorter network's record: push that down to both
			// halves, and the new network then overrides part of one.
			t.nodes = append(t.nodes, [2]int{c, c})
			c = len(t.nodes) - 1
			t.nodes[n][b] = c
		}
		n = c
	}
	t.nodes[n][bitAt(a, p.Bits()-1)] = -(recOff + 1)
}

func bitAt(a [16]byte, i int) int {
	return int(a[i/8]>>(7-i%8)) & 1
}
