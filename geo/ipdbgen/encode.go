package ipdbgen

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// metaJSON fixes the key order of the header.
type metaJSON struct {
	Build     int64          `json:"build"`
	IPVersion int            `json:"ip_version"`
	Languages map[string]int `json:"languages"`
	NodeCount int            `json:"node_count"`
	TotalSize int            `json:"total_size"`
	Fields    []string       `json:"fields"`
}

// encode lays out the file: metadata length and JSON, the nodes, an extra
// node whose children are both "not found" (readers that step past the last
// node, as some do, then still find nothing), and the records.
func (t *trie) encode(m Meta, ipVersion int, recData []byte) ([]byte, error) {
	n := len(t.nodes)
	if uint64(n)+8+uint64(len(recData)) > math.MaxUint32 {
		return nil, fmt.Errorf("ipdbgen: %d nodes and %d bytes of records are too many", n, len(recData))
	}
	langs := make(map[string]int, len(m.Languages))
	for i, l := range m.Languages {
		langs[l] = i * len(m.Fields)
	}
	total := n*8 + 8 + len(recData)
	meta, err := json.Marshal(metaJSON{
		Build:     m.Build,
		IPVersion: ipVersion,
		Languages: langs,
		NodeCount: n,
		TotalSize: total,
		Fields:    m.Fields,
	})
	if err != nil {
		return nil, fmt.Errorf("ipdbgen: %w", err)
	}
	order, index := t.preorder()
	value := func(c int) uint32 {
		switch {
		case c == 0:
			return uint32(n)
		case c > 0:
			return uint32(index[c])
		default:
			return uint32(n + 8 + (-c - 1))
		}
	}
	out := make([]byte, 0, 4+len(meta)+total)
	out = binary.BigEndian.AppendUint32(out, uint32(len(meta)))
	out = append(out, meta...)
	for _, i := range order {
		out = binary.BigEndian.AppendUint32(out, value(t.nodes[i][0]))
		out = binary.BigEndian.AppendUint32(out, value(t.nodes[i][1]))
	}
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	return append(out, recData...), nil
}

// preorder numbers the nodes depth first, so that the nodes of a lookup's
// path lie close together (in insertion order they are scattered, and every
// step of a walk would miss the cache). order[new] is the old index of a
// node, index[old] the new one.
func (t *trie) preorder() (order, index []int) {
	order = make([]int, 0, len(t.nodes))
	index = make([]int, len(t.nodes))
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		index[i] = len(order)
		order = append(order, i)
		for _, c := range []int{t.nodes[i][1], t.nodes[i][0]} {
			if c > 0 {
				stack = append(stack, c)
			}
		}
	}
	return order, index
}
