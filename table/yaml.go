package table

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// decode reads data into v, rejecting keys the schema doesn't know, and
// returns the document's node tree for the lines of its entries. An error
// names the line and the path of the entry, e.g.
// `line 4: nodes[0].probe: unknown key "kind"`.
func decode(data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty file")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return nil, explain(root.Content[0], te)
	}
	return root.Content[0], err
}

var unknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)`)

// listOf is the top-level list whose entries have the decoder's type: an
// entry an alias shares between lists is reported where it failed.
var listOf = map[string]string{"table.nodeEntry": "nodes", "table.recordEntry": "records"}

// explain rewrites the decoder's first complaint with the entry's path.
func explain(doc *yaml.Node, te *yaml.TypeError) error {
	msg := te.Errors[0]
	m := unknownField.FindStringSubmatch(msg)
	if m == nil {
		return errors.New(msg)
	}
	line, _ := strconv.Atoi(m[1])
	path, ok := "", false
	if list := listOf[m[3]]; list != "" {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == list {
				path, ok = keyPath(doc.Content[i+1], line, m[2], list)
			}
		}
	}
	if !ok {
		path, ok = keyPath(doc, line, m[2], "")
	}
	if !ok || path == "" {
		return fmt.Errorf("line %d: unknown key %q", line, m[2])
	}
	return fmt.Errorf("line %d: %s: unknown key %q", line, path, m[2])
}

// keyPath finds the mapping key named key at line and returns the path of
// the mapping that holds it.
func keyPath(n *yaml.Node, line int, key, path string) (string, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Line == line && k.Value == key {
				return path, true
			}
			if p, ok := keyPath(n.Content[i+1], line, key, join(path, k.Value)); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := keyPath(c, line, key, path+"["+strconv.Itoa(i)+"]"); ok {
				return p, true
			}
		}
	}
	return "", false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// entryLines returns the line of each element of the top-level sequence key.
func entryLines(doc *yaml.Node, key string) []int {
	doc = resolve(doc)
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != key {
			continue
		}
		seq := resolve(doc.Content[i+1])
		lines := make([]int, len(seq.Content))
		for j, c := range seq.Content {
			lines[j] = c.Line
		}
		return lines
	}
	return nil
}

// resolve follows an alias to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// lineAt returns lines[i], or 0 when the entry has no known line.
func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

// where names entry i of a list for an error: its line and index.
func where(list string, lines []int, i int) string {
	return "line " + strconv.Itoa(lineAt(lines, i)) + ": " + list + "[" + strconv.Itoa(i) + "]"
}
