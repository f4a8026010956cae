// Package yamlfile reads the plugin's YAML files (the node table, the
// overrides, the quality matrix, the admin state) strictly: an unknown key
// is an error, and every error names the line and the path of the entry.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Decode reads data into v, rejecting keys the schema doesn't know, and
// returns the document's node tree for the lines of its entries. An error
// names the line and the path of the entry, e.g.
// `line 4: nodes[0].probe: unknown key "kind"`. lists maps the Go type of a
// top-level list's entries (as the YAML decoder names it, e.g.
// "table.nodeEntry") to the list's key, so that an entry an alias shares
// between lists is reported where it failed.
func Decode(data []byte, v any, lists map[string]string) (*yaml.Node, error) {
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
		return nil, explain(root.Content[0], te, lists)
	}
	return root.Content[0], err
}

var unknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)`)

// explain rewrites the decoder's first complaint with the entry's path.
func explain(doc *yaml.Node, te *yaml.TypeError, lists map[string]string) error {
	msg := te.Errors[0]
	m := unknownField.FindStringSubmatch(msg)
	if m == nil {
		return errors.New(msg)
	}
	line, _ := strconv.Atoi(m[1])
	path, ok := "", false
	if list := lists[m[3]]; list != "" {
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

// EntryLines returns the line of each element of the top-level sequence key.
func EntryLines(doc *yaml.Node, key string) []int {
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

// LineAt returns lines[i], or 0 when the entry has no known line.
func LineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

// Where names entry i of a list for an error: its line and index.
func Where(list string, lines []int, i int) string {
	return "line " + strconv.Itoa(LineAt(lines, i)) + ": " + list + "[" + strconv.Itoa(i) + "]"
}

// Time is an RFC 3339 time whose errors name their line.
type Time struct{ time.Time }

// UnmarshalYAML implements yaml.Unmarshaler.
func (t *Time) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.Parse(time.RFC3339, n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a time such as 2026-12-31T00:00:00Z", n.Line, n.Value)
	}
	t.Time = v
	return nil
}
