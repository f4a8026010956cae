package edgeagent

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Position is where the agent is in the log: the file (by inode) and the
// offset of the first line not yet read.
type Position struct {
	Ino    uint64 `json:"ino"`
	Offset int64  `json:"offset"`
}

// tailer reads whole lines of a log that nginx appends to and that is
// rotated by rename (and reopen) or copied and truncated.
type tailer struct {
	path string
	f    *os.File
	pos  Position
	// old is the file renamed away: read to its end before the new one,
	// and again until oldUntil, as nginx's workers reopen the log one
	// after the other.
	old      *os.File
	oldUntil time.Time
	buf      []byte
}

// rotateGrace is how long a renamed log is still read.
const rotateGrace = 5 * time.Second

const maxLine = 64 << 10 // a longer line is skipped

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// openTail resumes at pos: in the file at path if it is pos's, else in a
// file of the same directory that is (the log rotated while the agent was
// stopped), then the file at path from its start. A zero pos starts at the
// end of the file: the agent does not count what it did not see served.
func openTail(path string, pos Position, fromEnd bool) (*tailer, error) {
	t := &tailer{path: path}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	ino := inode(fi)
	switch {
	case pos.Ino == 0 && fromEnd:
		t.pos = Position{Ino: ino, Offset: fi.Size()}
	case pos.Ino == 0:
		t.pos = Position{Ino: ino}
	case pos.Ino == ino:
		t.pos = pos
		if fi.Size() < pos.Offset { // truncated meanwhile
			t.pos.Offset = 0
		}
	default:
		t.pos = Position{Ino: ino}
		if old := findInode(filepath.Dir(path), pos.Ino); old != nil {
			if _, err := old.Seek(pos.Offset, io.SeekStart); err == nil {
				t.old = old
			} else {
				old.Close()
			}
		}
	}
	if _, err := f.Seek(t.pos.Offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	t.f = f
	return t, nil
}

// findInode opens the file of dir with inode ino; nil without one.
func findInode(dir string, ino uint64) *os.File {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || inode(fi) != ino {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err == nil {
			return f
		}
	}
	return nil
}

// read calls line for every whole line appended since the last read, and
// follows a rotation: the renamed file to its end, then the new one; a
// truncated file from its start.
func (t *tailer) read(line func([]byte)) error {
	if t.old != nil {
		err := t.drain(t.old, nil, line)
		if err != nil || !time.Now().Before(t.oldUntil) {
			t.old.Close()
			t.old = nil
		}
		if err != nil {
			return err
		}
	}
	if err := t.drain(t.f, &t.pos.Offset, line); err != nil {
		return err
	}
	fi, err := os.Stat(t.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // renamed, not yet reopened: the next read finds it
	case err != nil:
		return err
	}
	if ino := inode(fi); ino != t.pos.Ino {
		// Rotated: what nginx wrote to the old file before it reopened
		// is read first, now and at the next read.
		f, err := os.Open(t.path)
		if err != nil {
			return err
		}
		if err := t.drain(t.f, &t.pos.Offset, line); err != nil {
			f.Close()
			return err
		}
		if _, err := t.f.Seek(t.pos.Offset, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		if t.old != nil {
			t.old.Close()
		}
		t.old, t.oldUntil = t.f, time.Now().Add(rotateGrace)
		t.f, t.pos = f, Position{Ino: ino}
		return t.drain(t.f, &t.pos.Offset, line)
	}
	if fi.Size() < t.pos.Offset { // copytruncate
		t.pos.Offset = 0
		if _, err := t.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return t.drain(t.f, &t.pos.Offset, line)
	}
	return nil
}

// drain reads f's whole lines from where it is, advancing *offset (when
// not nil) past each; a partial last line waits for its end.
func (t *tailer) drain(f *os.File, offset *int64, line func([]byte)) error {
	var start int64
	if offset != nil {
		start = *offset
	} else {
		cur, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		start = cur
	}
	if t.buf == nil {
		t.buf = make([]byte, 0, 256<<10)
	}
	pending := t.buf[:0]
	chunk := make([]byte, 128<<10)
	for {
		n, err := f.ReadAt(chunk, start+int64(len(pending)))
		pending = append(pending, chunk[:n]...)
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			if i <= maxLine {
				line(pending[:i])
			}
			start += int64(i + 1)
			pending = pending[i+1:]
		}
		if len(pending) > maxLine { // no newline in sight: skip it
			start += int64(len(pending))
			pending = pending[:0]
		}
		if offset != nil {
			*offset = start
		}
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	if offset == nil {
		_, err := f.Seek(start, io.SeekStart)
		return err
	}
	return nil
}

func (t *tailer) close() {
	if t.old != nil {
		t.old.Close()
	}
	t.f.Close()
}
