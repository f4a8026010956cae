// Package atomicfile writes a file so that a reader sees the old content or
// the new, never half of it: into a temporary file beside it, renamed into
// place. Every file the plugin watches should be written this way. Open
// is the reading side: a file refused before it is read when it is over a
// size limit.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path with what write puts into it, mode 0644.
func Write(path string, write func(io.Writer) error) error {
	return WriteMode(path, 0o644, write)
}

// WriteMode is Write with the file's mode.
func WriteMode(path string, mode os.FileMode, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	// On disk before the rename, so that a crash leaves the old file or
	// the whole new one, not an empty one.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), mode); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // the rename itself; not every filesystem supports it
		d.Close()
	}
	return nil
}

// WriteBytes creates path holding b.
func WriteBytes(path string, b []byte) error { return WriteBytesMode(path, 0o644, b) }

// WriteBytesMode creates path holding b, with mode.
func WriteBytesMode(path string, mode os.FileMode, b []byte) error {
	return WriteMode(path, mode, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// SizeError is a file over the size limit.
type SizeError struct {
	Path        string
	Size, Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, over the size limit of %d bytes (max_file_size)", e.Path, e.Size, e.Limit)
}

// Open opens path, refusing it (*SizeError) when it is larger than limit
// bytes; size is its size when opened.
func Open(path string, limit int64) (f *os.File, size int64, err error) {
	if f, err = os.Open(path); err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() > limit {
		err = &SizeError{Path: path, Size: fi.Size(), Limit: limit}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}
