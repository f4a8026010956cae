package overrides

import "net/netip"

// trie is a binary trie of one family's prefixes.
type trie struct {
	nodes []tnode // nodes[0] is the root, the empty prefix
}

type tnode struct {
	child [2]int32 // 0: none
	loc   int32    // entry with a location whose prefix ends here, or -1
	pin   int32    // entry with nodes whose prefix ends here, or -1
	has   bool     // an entry ends here or below
}

func newTrie() *trie { return &trie{nodes: []tnode{{loc: -1, pin: -1}}} }

// insert adds entry i's prefix p (masked, of the trie's family).
func (t *trie) insert(p netip.Prefix, i int32, loc, pin bool) {
	a := p.Addr().AsSlice()
	n := int32(0)
	t.nodes[n].has = true
	for d := 0; d < p.Bits(); d++ {
		b := bit(a, d)
		next := t.nodes[n].child[b]
		if next == 0 {
			t.nodes = append(t.nodes, tnode{loc: -1, pin: -1})
			next = int32(len(t.nodes) - 1)
			t.nodes[n].child[b] = next
		}
		n = next
		t.nodes[n].has = true
	}
	if loc {
		t.nodes[n].loc = i
	}
	if pin {
		t.nodes[n].pin = i
	}
}

// lookup walks addr's bits (a is its 4 or 16 bytes) and returns the longest
// location and pin entries that contain it with their lengths, and the
// shortest prefix of addr that holds no other entry: a reply's scope must
// not reach an override that would answer otherwise.
func (t *trie) lookup(a []byte) (loc, locBits, pin, pinBits int32, minBits uint8) {
	loc, pin = -1, -1
	n := int32(0)
	last := len(a) * 8
	for d := 0; ; d++ {
		nd := &t.nodes[n]
		if nd.loc >= 0 {
			loc, locBits = nd.loc, int32(d)
		}
		if nd.pin >= 0 {
			pin, pinBits = nd.pin, int32(d)
		}
		if d == last {
			break
		}
		b := bit(a, d)
		if o := nd.child[1-b]; o != 0 && t.nodes[o].has {
			minBits = uint8(d + 1)
		}
		next := nd.child[b]
		if next == 0 {
			break
		}
		n = next
	}
	return loc, locBits, pin, pinBits, minBits
}

func bit(a []byte, d int) int { return int(a[d/8]>>(7-d%8)) & 1 }
