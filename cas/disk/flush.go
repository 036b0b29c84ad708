package disk

import (
	"errors"
	"fmt"
	"os"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// flushPoint makes a set of writes durable together, at one point: one
// syncfs(2) of the store's filesystem where it is available, else an fsync
// of each file and folder noted with file and dir (the portable path:
// macOS, the BSDs, a kernel or filesystem without syncfs, and pool mode).
// Either way, everything noted is on stable storage when flush returns
// nil. Writers note every file they write before the flush point and every
// folder whose entries they change, so that the portable path syncs exactly
// what syncfs would have covered. A flushPoint is used by one goroutine.
//
// With DurabilityNone a flushPoint does nothing.
type flushPoint struct {
	s     *Store
	files []string
	open  []atomicfile.File // files known by descriptor (unnamed files)
	dirs  []string
}

func (s *Store) newFlushPoint() *flushPoint { return &flushPoint{s: s} }

// file notes a file written (not synced) before the flush point.
func (p *flushPoint) file(path string) { p.files = append(p.files, path) }

// openFile notes an open file written (not synced) before the flush point: an
// unnamed file, which has no path to open again.
func (p *flushPoint) openFile(f atomicfile.File) { p.open = append(p.open, f) }

// dir notes a folder whose entries changed before the flush point.
func (p *flushPoint) dir(path string) { p.dirs = append(p.dirs, path) }

// flush makes everything noted durable, then forgets it.
func (p *flushPoint) flush() error {
	files, open, dirs := p.files, p.open, p.dirs
	p.files, p.open, p.dirs = nil, nil, nil
	if !p.s.durable || len(files)+len(open)+len(dirs) == 0 {
		return nil
	}
	if err := p.s.syncFS(); !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	// No syncfs here: sync each file, then each folder.
	err := forEach(len(open), func(k int) error { return open[k].Sync() })
	if err != nil {
		return err
	}
	err = forEach(len(files), func(k int) error { return p.s.syncFile(files[k]) })
	if err != nil {
		return err
	}
	return forEach(len(dirs), func(k int) error { return p.s.fs.SyncDir(dirs[k]) })
}

// syncFS calls syncfs(2) on the store's filesystem. The error wraps
// [errors.ErrUnsupported] where it is unavailable, or in pool mode (a test
// and benchmark knob that takes the portable path on Linux).
func (s *Store) syncFS() error {
	if s.opts.batchSync == batchSyncPool {
		return errors.ErrUnsupported
	}
	return s.fs.SyncFS(s.tmpDir)
}

// syncFile fsyncs the file at path through a new descriptor: fsync(2)
// commits the file's data whichever descriptor wrote it.
func (s *Store) syncFile(path string) error {
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
