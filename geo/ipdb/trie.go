package ipdb

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// The trie has NodeCount nodes of two big-endian uint32 children (bit 0,
// bit 1). A child below NodeCount is a node, equal to it means "not found",
// and above it points at a record (see recordAt).

const inProgress = 0xff // checkTrie state of a node on the current path

// checkTrie walks every node reachable from the root once and rejects
// children pointing past the data, loops and paths longer than 128 bits, so
// that lookups never meet them.
func (r *Reader) checkTrie() error {
	// state: 0 unvisited, inProgress, else the node's height (1..128): the
	// most nodes on a path from it down to a leaf.
	state := make([]uint8, r.nodes)
	type frame struct {
		node      uint32
		next, max uint8 // next child to visit, tallest child so far
	}
	stack := make([]frame, 1, 128)
	state[0] = inProgress
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next == 2 {
			state[f.node] = f.max + 1
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := &stack[len(stack)-1]
				p.max = max(p.max, f.max+1)
			}
			continue
		}
		bit := int(f.next)
		v := r.child(int(f.node), bit)
		f.next++
		switch {
		case int(v) == r.nodes:
		case int(v) > r.nodes:
			if _, ok := r.recordAt(v); !ok {
				return fmt.Errorf("node %d child %d: record pointer %d is past the data", f.node, bit, v)
			}
		case state[v] == 0:
			if len(stack) == 128 {
				return fmt.Errorf("node %d child %d: trie is deeper than 128 bits", f.node, bit)
			}
			state[v] = inProgress
			stack = append(stack, frame{node: v})
		case state[v] == inProgress:
			return fmt.Errorf("node %d child %d: loop back to node %d", f.node, bit, v)
		default: // reached before by another path
			if len(stack)+int(state[v]) > 128 {
				return fmt.Errorf("node %d child %d: trie is deeper than 128 bits", f.node, bit)
			}
			f.max = max(f.max, state[v])
		}
	}
	return nil
}

// child reads a child of node, which must be below r.nodes.
func (r *Reader) child(node, bit int) uint32 {
	return binary.BigEndian.Uint32(r.data[node*8+bit*4:])
}

// findV4Root walks ::ffff:0:0/96: 80 zero bits, then 16 one bits.
func (r *Reader) findV4Root() uint32 {
	v := uint32(0)
	for i := 0; i < 96 && int(v) < r.nodes; i++ {
		v = r.child(int(v), i/80)
	}
	return v
}

// recordAt returns the record a child value v > r.nodes points at: a
// big-endian uint16 length, then that many bytes.
func (r *Reader) recordAt(v uint32) (string, bool) {
	off := uint64(v) - uint64(r.nodes) + uint64(r.nodes)*8
	if off+2 > uint64(len(r.str)) {
		return "", false
	}
	end := off + 2 + uint64(binary.BigEndian.Uint16(r.data[off:]))
	if end > uint64(len(r.str)) {
		return "", false
	}
	return r.str[off+2 : end], true
}

// Lookup finds the record of addr in the reader's language. bits is the
// prefix length of the block the answer holds for, in IPv4 terms for IPv4 and
// IPv4-mapped addresses: the depth at which the walk met the record, which
// may exceed the length of the network in the source data when a longer
// network lies inside it. It allocates nothing.
func (r *Reader) Lookup(addr netip.Addr) (rec Record, bits int, ok bool) {
	addr = addr.Unmap()
	v, start := uint32(0), 0
	switch {
	case addr.Is4():
		v, start = r.v4root, 96
	case addr.Is6() && r.v6:
	default:
		return Record{}, 0, false
	}
	a := addr.As16()
	i := start
	// checkTrie bounds paths at 128 bits; the loop bound is a second guard.
	for ; i < 128 && int(v) < r.nodes; i++ {
		v = r.child(int(v), int(a[i>>3]>>(7-i&7)&1))
	}
	if int(v) <= r.nodes {
		return Record{}, 0, false
	}
	raw, ok := r.recordAt(v)
	if !ok {
		return Record{}, 0, false
	}
	rec, ok = r.parse(raw)
	if !ok {
		return Record{}, 0, false
	}
	return rec, i - start, true
}

// maxWalk bounds the steps of Networks4: shared subtrees can make a small
// trie stand for billions of paths.
const maxWalk = 1 << 26

// Networks4 calls fn for every IPv4 network with a record, in address
// order, with the record's id (networks sharing a record share its id),
// until fn returns false. It reports whether it walked every network: a
// trie of more than maxWalk steps is cut short.
func (r *Reader) Networks4(fn func(p netip.Prefix, id uint32) bool) bool {
	type frame struct {
		v    uint32
		addr uint32
		bits uint8
	}
	stack := []frame{{v: r.v4root}}
	for steps := 0; len(stack) > 0; steps++ {
		if steps == maxWalk {
			return false
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case int(f.v) == r.nodes:
		case int(f.v) > r.nodes:
			a := netip.AddrFrom4([4]byte{byte(f.addr >> 24), byte(f.addr >> 16), byte(f.addr >> 8), byte(f.addr)})
			if !fn(netip.PrefixFrom(a, int(f.bits)), f.v) {
				return false
			}
		case f.bits < 32:
			// Bit 1 first on the stack, so that bit 0 comes out first.
			stack = append(stack, frame{r.child(int(f.v), 1), f.addr | 1<<(31-f.bits), f.bits + 1}, frame{r.child(int(f.v), 0), f.addr, f.bits + 1})
		}
	}
	return true
}

// RecordOf returns the record of an id Networks4 gave.
func (r *Reader) RecordOf(id uint32) (Record, bool) {
	raw, ok := r.recordAt(id)
	if !ok {
		return Record{}, false
	}
	return r.parse(raw)
}
