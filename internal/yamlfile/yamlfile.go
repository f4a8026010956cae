// Package yamlfile reads the plugin's YAML files (the node table, the
// overrides, the quality matrix, the admin state) strictly: an unknown key
// or an alias is an error, every error names the line and the path of the
// entry, and a file over the size limit is refused before it is read.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gslbdns/gslb/internal/atomicfile"
	"github.com/gslbdns/gslb/internal/suggest"
	"github.com/gslbdns/gslb/internal/yield"
)

// DefaultMaxSize is the size limit of a YAML file (Corefile max_file_size).
const DefaultMaxSize = 16 << 20

// ErrEmpty is Decode's error for a file without a document.
var ErrEmpty = errors.New("empty file")

// SizeError is a file over the size limit.
type SizeError = atomicfile.SizeError

// ReadFile reads path, refusing it when it is larger than limit bytes
// (DefaultMaxSize when limit <= 0) before reading it whole.
func ReadFile(path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	f, _, err := atomicfile.Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may grow while it is read: never read more than the limit.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &SizeError{Path: path, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// Lines holds the line of each entry of the document's top-level lists.
type Lines map[string][]int

// Decode reads data into v, rejecting aliases and keys the schema doesn't
// know. It parses the document once, checks the node tree (each node once:
// aliases are refused, never expanded), decodes it, and keeps only the
// lines of the top-level lists' entries. An error names the line and the
// path of the entry, e.g. `line 4: nodes[0].probe: unknown key "kind"`.
func Decode(data []byte, v any) (Lines, error) {
	// A large file is parsed in slices the queries pass between.
	return decode(data, v, yield.New())
}

// DecodeYielding is Decode yielding through y, which the caller goes on
// using for what it builds from v.
func DecodeYielding(data []byte, v any, y *yield.Yielder) (Lines, error) {
	return decode(data, v, y)
}

// DecodeHeld is Decode for a caller that holds a lock others wait on: it
// never yields.
func DecodeHeld(data []byte, v any) (Lines, error) { return decode(data, v, nil) }

func decode(data []byte, v any, y *yield.Yielder) (Lines, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(y.Reader(bytes.NewReader(data)))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmpty
		}
		return nil, syntaxError(data, err)
	}
	// A second document would be ignored: refuse it, or an entry an
	// operator added after a "---" would silently not apply.
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(data, err)
	default:
		if len(more.Content) == 1 && more.Content[0].Tag == "!!null" && more.Content[0].Value == "" {
			break // a trailing "---" alone
		}
		return nil, fmt.Errorf("line %d: a second YAML document: a file holds one (remove the ---)", more.Line)
	}
	if len(root.Content) == 0 {
		return nil, ErrEmpty
	}
	doc := root.Content[0]
	y.Point()
	if err := noAliases(doc); err != nil {
		return nil, err
	}
	if err := knownKeys(doc, reflect.TypeOf(v), "", y); err != nil {
		return nil, err
	}
	y.Point()
	if err := decodeEntries(doc, v, y); err != nil {
		return nil, decodeError(doc, v, err)
	}
	y.Point()
	lines := Lines{}
	if doc.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if seq := doc.Content[i+1]; seq.Kind == yaml.SequenceNode {
				l := make([]int, len(seq.Content))
				for j, c := range seq.Content {
					l[j] = c.Line
				}
				lines[doc.Content[i].Value] = l
			}
		}
	}
	return lines, nil
}

// noAliases refuses the first alias. Without aliases the tree is as large
// as the file, so checking and decoding it take time linear in its size.
func noAliases(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("line %d: an alias (*%s) is not allowed: write the value out", n.Line, n.Value)
	}
	for _, c := range n.Content {
		if err := noAliases(c); err != nil {
			return err
		}
	}
	return nil
}

// decodeEntries is doc.Decode(v), yielding between the entries of v's
// top-level lists: a node table's decode is otherwise one stretch of a
// millisecond or more that the queries wait behind.
func decodeEntries(doc *yaml.Node, v any, y *yield.Yielder) error {
	rv := reflect.ValueOf(v)
	if y == nil || doc.Kind != yaml.MappingNode || rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return doc.Decode(v)
	}
	if _, self := decodesItself(rv.Type()); self {
		return doc.Decode(v)
	}
	type list struct {
		field reflect.Value
		seq   *yaml.Node
	}
	var lists []list
	rest := *doc // the document with its lists empty, decoded whole
	rest.Content = slices.Clone(doc.Content)
	index := fieldIndex(rv.Elem().Type())
	for i := 0; i+1 < len(doc.Content); i += 2 {
		seq := doc.Content[i+1]
		f, ok := index[doc.Content[i].Value]
		if !ok || seq.Kind != yaml.SequenceNode || len(seq.Content) < 2 {
			continue
		}
		fv := rv.Elem().Field(f)
		if fv.Kind() != reflect.Slice {
			continue
		}
		if _, self := decodesItself(fv.Type()); self {
			continue
		}
		empty := *seq
		empty.Content = nil
		rest.Content[i+1] = &empty
		lists = append(lists, list{fv, seq})
	}
	// On an error, one decode of the whole document: an unmarshaler's
	// error or a duplicate key stops it, and it meets them in the file's
	// order, which the lists taken apart are not.
	orig := reflect.New(rv.Elem().Type()).Elem()
	orig.Set(rv.Elem())
	whole := func() error {
		rv.Elem().Set(orig)
		return doc.Decode(v)
	}
	if rest.Decode(v) != nil {
		return whole()
	}
	for _, l := range lists {
		// Each entry as a list of one, so that an entry the decoder leaves
		// out (a null where a mapping belongs) is left out here too.
		s := reflect.MakeSlice(l.field.Type(), 0, len(l.seq.Content))
		one := *l.seq
		for _, c := range l.seq.Content {
			one.Content = []*yaml.Node{c}
			e := reflect.New(l.field.Type())
			if one.Decode(e.Interface()) != nil {
				return whole()
			}
			s = reflect.AppendSlice(s, e.Elem())
			y.Point()
		}
		l.field.Set(s)
	}
	return nil
}

// fieldIndex maps a struct's YAML keys to the index of their field, for
// the fields that are not inlined.
func fieldIndex(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if name, inline, ok := yamlKey(t.Field(i)); ok && !inline {
			m[name] = i
		}
	}
	return m
}

// yamlKey is a field's YAML key as the decoder names it: the tag's name,
// else the lowercased field name; inline: its fields are the struct's;
// false: the decoder skips it.
func yamlKey(f reflect.StructField) (name string, inline, ok bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if !f.IsExported() || name == "-" {
		return "", false, false
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, strings.Contains(opts, "inline"), true
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// decodesItself strips t's pointers, and reports whether t or a pointer on
// the way is a yaml.Unmarshaler: its own checks then stand.
func decodesItself(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		if t.Implements(unmarshaler) {
			return t, true
		}
		t = t.Elem()
	}
	return t, t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler)
}

// knownKeys refuses a mapping key that the Go type t has no field for, at
// the key's line, with the path of the mapping that holds it. A node of
// the wrong kind is left to the decoder to report.
func knownKeys(n *yaml.Node, t reflect.Type, path string, y *yield.Yielder) error {
	t, self := decodesItself(t)
	if self {
		return nil
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				hint := suggest.Hint(k.Value, slices.Sorted(maps.Keys(fields)))
				if path == "" {
					return fmt.Errorf("line %d: unknown key %q%s", k.Line, k.Value, hint)
				}
				return fmt.Errorf("line %d: %s: unknown key %q%s", k.Line, path, k.Value, hint)
			}
			if err := knownKeys(n.Content[i+1], ft, join(path, k.Value), y); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := knownKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), y); err != nil {
				return err
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := knownKeys(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", y); err != nil {
				return err
			}
			y.Point()
		}
	}
	return nil
}

// fieldsOf caches yamlFields per type: knownKeys asks for every mapping.
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// yamlFields maps a struct's YAML keys to their field types, as the
// decoder names them: the tag's name, else the lowercased field name.
// Callers only read the map.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := structFields(t)
	fieldsOf.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline, ok := yamlKey(f)
		switch {
		case !ok:
		case inline:
			for k, v := range yamlFields(f.Type) {
				m[k] = v
			}
		default:
			m[name] = f.Type
		}
	}
	return m
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Release hands the memory a parse of size bytes used back to the system
// when the file was large: the node tree is some 20 times the file's size,
// and the runtime would keep it for minutes. Callers defer it once the
// parsed file is in its compact form.
func Release(size int) {
	if size >= 1<<20 {
		debug.FreeOSMemory()
	}
}

// EntryLines returns the line of each element of the top-level list key.
func EntryLines(lines Lines, key string) []int { return lines[key] }

// FieldLine returns the line of the key at path inside element i of the
// top-level sequence list, as deep as the path is present (a probe key set
// only in probe_defaults gives the line of probe), else the element's line,
// else 0. It parses data again: it runs only for an error, on a file that
// Decode accepted, so without aliases.
func FieldLine(data []byte, list string, i int, path ...string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	doc := root.Content[0]
	var n *yaml.Node
	for k := 0; k+1 < len(doc.Content); k += 2 {
		if doc.Content[k].Value == list {
			n = doc.Content[k+1]
			break
		}
	}
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return 0
	}
	n = n.Content[i]
	line := n.Line
	for _, key := range path {
		var next *yaml.Node
		for k := 0; n.Kind == yaml.MappingNode && k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == key {
				line, next = n.Content[k].Line, n.Content[k+1]
				break
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}

// MessageLine is FieldLine for an error message about element i that
// starts with the field's path ("field a.b: ..." or "a.b: ..."): the line
// of that field, or 0.
func MessageLine(data []byte, list string, i int, msg string) int {
	name := strings.TrimPrefix(msg, "field ")
	end := strings.IndexAny(name, ":[/ ")
	if end <= 0 {
		return 0
	}
	return FieldLine(data, list, i, strings.Split(name[:end], ".")...)
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

// KeyLine is the line of the key at path from the document's top-level
// mapping (a number indexes a sequence), or 0 unless the whole path is
// present. Like FieldLine it parses data again, for an error only.
func KeyLine(data []byte, path ...string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	n, line := root.Content[0], 0
	for _, key := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for k := 0; k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == key {
					line, next = n.Content[k].Line, n.Content[k+1]
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}
