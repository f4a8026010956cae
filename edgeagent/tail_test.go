package edgeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func appendLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := from; i < to; i++ {
		fmt.Fprintf(f, "line %d\n", i)
	}
}

// The tailer reads each line once through a rename with lines written to
// the old file after it, a copytruncate, and a partial last line.
func TestTailRotations(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendLines(t, log, 0, 5)
	tl, err := openTail(log, Position{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.close()
	var got []string
	read := func() {
		t.Helper()
		if err := tl.read(func(l []byte) { got = append(got, string(l)) }); err != nil {
			t.Fatal(err)
		}
	}
	read()
	appendLines(t, log, 5, 8)
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log+".1", 8, 10) // nginx writes on until it reopens
	read()
	appendLines(t, log, 10, 12) // reopened
	appendLines(t, log+".1", 12, 13)
	read()
	appendLines(t, log, 13, 15)
	// copytruncate: copied away, then cut to 0, then written on.
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, 15, 16)
	read()
	f, _ := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0o644)
	f.WriteString("line 16") // no newline yet
	read()
	f.WriteString("\n")
	f.Close()
	read()
	// 13 and 14 were written after the last read and cut by the
	// truncation: copytruncate loses them.
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 10, 11, 15, 16} // the old file first
	if len(got) != len(want) {
		t.Fatalf("Read %v, want lines %v", got, want)
	}
	for i, n := range want {
		if got[i] != fmt.Sprintf("line %d", n) {
			t.Fatalf("Read %v, want lines %v", got, want)
		}
	}
}

// A restart resumes at the position, in the renamed file when the log
// rotated while the agent was stopped.
func TestTailResumesInRenamedFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	appendLines(t, log, 0, 3)
	tl, err := openTail(log, Position{}, true)
	if err != nil {
		t.Fatal(err)
	}
	appendLines(t, log, 3, 5)
	var got []string
	tl.read(func(l []byte) { got = append(got, string(l)) })
	pos := tl.pos
	tl.close()
	appendLines(t, log, 5, 7)
	os.Rename(log, log+".1")
	appendLines(t, log, 7, 9)
	tl, err = openTail(log, pos, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.close()
	tl.read(func(l []byte) { got = append(got, string(l)) })
	if fmt.Sprint(got) != "[line 3 line 4 line 5 line 6 line 7 line 8]" {
		t.Errorf("Read %v, want lines 3 to 8 once each", got)
	}
}
