package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The YAML parser reports a bad indent at the line where the enclosing
// block starts, and a tab one line early: the errors below name the line
// where the problem is, the entry and the field, and what was wanted.

// yamlLine is the parser's prefix of a located error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError is err, a parse error of data, at the first line whose
// prefix of the file fails the same way, with a hint.
func syntaxError(data []byte, err error) error {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	if msg == err.Error() {
		return err // not a located parse error
	}
	line := firstBadLine(data, msg, err)
	if line == 0 {
		return err
	}
	switch {
	case strings.Contains(msg, "tab character"):
		msg += " (indent with spaces)"
	case strings.Contains(msg, "did not find expected '-'"), strings.Contains(msg, "did not find expected key"),
		strings.Contains(msg, "mapping values are not allowed"):
		msg += " (check this line's indentation against the lines above it)"
	}
	return fmt.Errorf("line %d: not valid YAML: %s", line, msg)
}

// searchBudget bounds the bytes firstBadLine parses, so that a mistake in
// a large file costs a few parses at most: beyond it the parser's own line
// stands.
const searchBudget = 2 << 20

// firstBadLine is the first line k such that the file's first k lines
// fail to parse with msg, or 0. A prefix that fails this way fails longer
// too, and the parser names a line at most one before the mistake (the
// start of its block, or the line before a tab): the search steps forward
// from there in growing strides, then halves the last stride. An unclosed
// bracket fails otherwise and does not count.
func firstBadLine(data []byte, msg string, reported error) int {
	var ends []int // the end of each line
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		ends = append(ends, len(data))
	}
	m := yamlLine.FindStringSubmatch(reported.Error())
	if m == nil || len(ends) == 0 {
		return 0
	}
	start, _ := strconv.Atoi(m[1])
	start = min(max(start-1, 1), len(ends))
	budget := searchBudget
	fails := func(k int) (bool, bool) {
		if budget -= ends[k-1]; budget < 0 {
			return false, false
		}
		var n yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(data[:ends[k-1]])).Decode(&n)
		return err != nil && yamlLine.ReplaceAllString(err.Error(), "") == msg, true
	}
	if bad, ok := fails(start); !ok || bad && start > 1 {
		return 0 // the mistake is before where the parser says: keep its line
	} else if bad {
		return start
	}
	lo, hi := start+1, start // fails(lo-1) is false
	for stride := 1; ; stride *= 2 {
		hi = min(hi+stride, len(ends))
		bad, ok := fails(hi)
		if !ok {
			return 0
		}
		if bad {
			break
		}
		if hi == len(ends) {
			return 0
		}
		lo = hi + 1
	}
	for lo < hi {
		mid := (lo + hi) / 2
		bad, ok := fails(mid)
		if !ok {
			return 0
		}
		if bad {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

var durationType = reflect.TypeFor[time.Duration]()

// typeError finds the first value of doc that does not fit its Go type t
// and says where and what was wanted, e.g. `line 3: nodes[0] (id
// hz-telecom): field ipv4: want a list, e.g. [192.0.2.10]`; nil when it
// finds none (a yaml.Unmarshaler's own error stands then).
func typeError(doc *yaml.Node, t reflect.Type) error {
	return walkTypes(doc, t, "", "")
}

// walkTypes checks n against t; entry names the top-level list's entry
// the node is in, field the path inside it (or from the top).
func walkTypes(n *yaml.Node, t reflect.Type, entry, field string) error {
	t, self := decodesItself(t)
	if self {
		return nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // the zero value
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("line %d: %s%s", n.Line, where(entry, field), fmt.Sprintf(format, args...))
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping (key: value), got %s", kindOf(n))
		}
		var fields map[string]reflect.Type
		if t.Kind() == reflect.Struct {
			fields = yamlFields(t)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			ft := t
			if fields != nil {
				ft = fields[n.Content[i].Value]
			} else {
				ft = t.Elem()
			}
			if ft == nil {
				continue // knownKeys refused it already
			}
			if err := walkTypes(n.Content[i+1], ft, entry, join(field, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.ScalarNode {
			return bad("want a list, e.g. [%s]", n.Value)
		}
		if n.Kind != yaml.SequenceNode {
			return bad("want a list, got %s", kindOf(n))
		}
		for i, c := range n.Content {
			e, f := entry, field+"["+strconv.Itoa(i)+"]"
			if entry == "" && !strings.ContainsAny(field, ".[") {
				e, f = field+"["+strconv.Itoa(i)+"]"+identity(c), ""
			}
			if err := walkTypes(c, t.Elem(), e, f); err != nil {
				return err
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return bad("want a single value, got %s", kindOf(n))
		}
		if n.Decode(reflect.New(t).Interface()) == nil {
			return nil
		}
		switch {
		case t == durationType:
			return bad("want a duration such as 10s, got %q", n.Value)
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			return bad("want a number such as 30.27, got %q", n.Value)
		case t.Kind() == reflect.Bool:
			return bad("want true or false, got %q", n.Value)
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			return bad("want a whole number, got %q", n.Value)
		default:
			return bad("want a %s, got %q", t.Kind(), n.Value)
		}
	}
	return nil
}

// where is the prefix of an error about field of entry.
func where(entry, field string) string {
	switch {
	case entry != "" && field != "":
		return entry + ": field " + field + ": "
	case entry != "":
		return entry + ": "
	case field != "":
		return "field " + field + ": "
	}
	return ""
}

// identity names a list entry by its id, name, cidr or node, when it has
// one: "(id hz-telecom)".
func identity(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for _, key := range []string{"id", "name", "cidr", "node"} {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; n.Content[i].Value == key && v.Kind == yaml.ScalarNode && v.Value != "" {
				return " (" + key + " " + v.Value + ")"
			}
		}
	}
	return ""
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// decodeError is Decode's error for err from decoding doc into v.
func decodeError(doc *yaml.Node, v any, err error) error {
	if te := typeError(doc, reflect.TypeOf(v)); te != nil {
		return te
	}
	var ye *yaml.TypeError
	if errors.As(err, &ye) && len(ye.Errors) > 0 {
		return errors.New(ye.Errors[0])
	}
	return err
}
