package edgeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gslbdns/gslb/internal/atomicfile"
)

// spool is a directory of batches not yet delivered, oldest first. A
// batch's name carries its sequence number and the log position after
// it, so that a restart resumes after the last batch spooled even if the
// offset file was not written.
type spool struct {
	dir string
	max int64 // bytes
}

type batch struct {
	seq  uint64
	pos  Position
	path string
	size int64
}

func (s *spool) name(seq uint64, pos Position) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d-%d-%d.ndjson", seq, pos.Ino, pos.Offset))
}

// put writes a batch atomically.
func (s *spool) put(seq uint64, pos Position, body []byte) error {
	return atomicfile.WriteBytesMode(s.name(seq, pos), 0o600, body)
}

// list is the spooled batches, oldest first.
func (s *spool) list() ([]batch, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var out []batch
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".ndjson")
		if !ok {
			continue
		}
		f := strings.Split(name, "-")
		if len(f) != 3 {
			continue
		}
		seq, err1 := strconv.ParseUint(f[0], 10, 64)
		ino, err2 := strconv.ParseUint(f[1], 10, 64)
		off, err3 := strconv.ParseInt(f[2], 10, 64)
		fi, err4 := e.Info()
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		out = append(out, batch{seq: seq, pos: Position{Ino: ino, Offset: off}, path: filepath.Join(s.dir, e.Name()), size: fi.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

// trim drops the oldest batches past the bound; it returns how many.
func (s *spool) trim(bs []batch) ([]batch, int) {
	total := int64(0)
	for _, b := range bs {
		total += b.size
	}
	dropped := 0
	for len(bs) > 1 && total > s.max {
		os.Remove(bs[0].path)
		total -= bs[0].size
		bs = bs[1:]
		dropped++
	}
	return bs, dropped
}
