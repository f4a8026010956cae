package yamlfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gslbdns/gslb/internal/testsupport"
	"github.com/gslbdns/gslb/internal/yield"
)

type entry struct {
	Name  string            `yaml:"name"`
	Inner *struct{ A int }  `yaml:"inner"`
	Tags  map[string]string `yaml:"tags"`
	When  *Time             `yaml:"when"`
}

type doc struct {
	Items []entry           `yaml:"items"`
	Other string            `yaml:"other"`
	At    *Time             `yaml:"at"`
	M     map[string]string `yaml:"m"`
}

// TestDecodeRejectsAliases: an alias is refused at its line before any
// expansion, whatever it names; the bomb included.
func TestDecodeRejectsAliases(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bomb", "other: x\nitems:\n  - name: &k bogus\n" + testsupport.AliasBomb("    "), "line 4: an alias (*k) is not allowed"},
		{"list aliased", "items: &i\n  - name: a\nother: *i\n", "line 3: an alias (*i)"},
		{"merge key", "items:\n  - &e {name: a}\n  - {<<: *e}\n", "line 3: an alias (*e)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			_, err := Decode([]byte(tc.yaml), &d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expected an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// TestDecodeErrors: unknown keys name their line and the entry's path;
// type errors keep the decoder's line; entry lines are kept.
func TestDecodeErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"items:\n  - name: a\n  - name: b\n    inner: {a: 1, b: 2}\n", `line 4: items[1].inner: unknown key "b"`},
		{"items:\n  - name: a\n    tags: {x: y}\n    colour: red\n", `line 4: items[0]: unknown key "colour"`},
		{"other: x\nextra: 1\n", `line 2: unknown key "extra"`},
		{"items: [{name: [1]}]\n", "line 1: items[0]: field name: want a single value, got a list"},
		{"items: [{when: soon}]\n", `line 1: "soon" is not a time`},
		{"items: [\n", "line 1: not valid YAML: did not find expected node content"},
	}
	for _, tc := range tests {
		var d doc
		_, err := Decode([]byte(tc.yaml), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: expected an error containing %q, got %v", tc.yaml, tc.want, err)
		}
	}
	var d doc
	lines, err := Decode([]byte("other: x\nitems:\n  - name: a\n\n  - name: b\n"), &d)
	if err != nil || len(d.Items) != 2 || d.Items[1].Name != "b" {
		t.Fatalf("Expected two items, got %+v, %v", d, err)
	}
	if got := EntryLines(lines, "items"); len(got) != 2 || got[0] != 3 || got[1] != 5 {
		t.Errorf("Expected entry lines [3 5], got %v", got)
	}
	if _, err := Decode([]byte("# nothing\n"), &d); !errors.Is(err, ErrEmpty) {
		t.Errorf("Expected ErrEmpty, got %v", err)
	}
}

// TestReadFileLimit: a file over the limit is refused with its path, size
// and the limit; one at the limit is read.
func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, 2047)
	var se *SizeError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), p+": 2048 bytes, over the size limit of 2047 bytes (max_file_size)") {
		t.Fatalf("Expected a size error naming the file, its size and the limit, got %v", err)
	}
	if data, err := ReadFile(p, 2048); err != nil || len(data) != 2048 {
		t.Fatalf("Expected the file at the limit to be read, got %d bytes, %v", len(data), err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Expected a missing file's error, got %v", err)
	}
}

// TestDecodeOneDocument: what follows the first document is an error, not
// silently ignored.
func TestDecodeOneDocument(t *testing.T) {
	type file struct {
		A []int `yaml:"a"`
		B []int `yaml:"b"`
	}
	for _, tc := range []struct{ data, want string }{
		{"a: [1]\n---\nb: [2]\n", "line 2: a second YAML document"},
		{"a: [1]\n---\nthis is: [not even, valid\n", "line "},
		{"{\"a\": [1]}\n{\"b\": [2]}\n", "line "},
		{"a: [1]\n---\n", ""},
		{"a: [1]\n", ""},
	} {
		var f file
		_, err := Decode([]byte(tc.data), &f)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Decode(%q): got %v, want %q", tc.data, err, tc.want)
		}
	}
}

// entryDocs are documents whose lists DecodeYielding decodes entry by entry.
var entryDocs = []string{
	"other: x\nitems:\n  - name: a\n    inner: {a: 1}\n  - name: b\n    tags: {k: v}\n  - {name: c, when: 2026-01-02T03:04:05Z}\n",
	"items:\n  - name: a\n  -\n  - name: c\n",
	"items: [{name: a}, {name: [1]}, {name: c}]\n",
	"items: [{name: a}, {when: soon}]\nother: [x]\n",
	"items: [{name: a}, {name: b}]\nitems: [{name: c}, {name: d}]\n",
	"items: [{name: a}, 7]\n",
	"items: []\nother: y\n",
	"items: x\n",
	"items: [{name: a}, {name: b}, {inner: {a: zz}}]\n",
	"items:\n  - {when: soon}\n  - {name: b}\nat: later\n",
	"m: {a: x, a: y}\nitems:\n  - {when: soon}\n  - {name: b}\n",
	"items:\n  - {when: soon}\n  - {name: b}\nm: {a: x, a: y}\n",
}

// TestDecodeEntriesAsWhole: decoding the top-level lists entry by entry,
// yielding between them, gives what one decode of the document gives:
// the same value, or the same error.
func TestDecodeEntriesAsWhole(t *testing.T) {
	for _, s := range entryDocs {
		sameAsWhole(t, []byte(s))
	}
}

// FuzzDecodeEntries: as TestDecodeEntriesAsWhole, for any document.
func FuzzDecodeEntries(f *testing.F) {
	for _, s := range entryDocs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		sameAsWhole(t, data)
	})
}

func sameAsWhole(t *testing.T, data []byte) {
	t.Helper()
	var byEntry, whole doc
	_, err1 := DecodeYielding(data, &byEntry, yield.New())
	_, err2 := DecodeHeld(data, &whole)
	if fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Fatalf("%q: entry by entry: %v; whole: %v", data, err1, err2)
	}
	if err1 == nil && !reflect.DeepEqual(byEntry, whole) {
		t.Fatalf("%q: entry by entry: %+v; whole: %+v", data, byEntry, whole)
	}
}
