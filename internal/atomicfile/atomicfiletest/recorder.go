// Package atomicfiletest provides a recording [atomicfile.FS] for tests that
// check the order of durable-write operations: a SIGKILL cannot reveal a
// missing fsync, a log of every write, sync and rename can.
package atomicfiletest

import (
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// Op is one recorded filesystem operation.
type Op struct {
	// Kind is one of: create (a temporary file), createunnamed (an
	// unnamed file: Path is its label, "<folder>/(unnamed <n>)", which
	// its writes, syncs and close also carry), open, write, truncate,
	// mtime (SetModTime), sync (a file), close, mkdir, rename, publish
	// (RenameNoReplace, or Link of an unnamed file: both name a file
	// without ever overwriting), remove, chtimes, syncdir, syncfs.
	Kind string
	// Path is the file or folder operated on, relative to the recorder's
	// Root, with '/' separators; for rename and publish, the old name (an
	// unnamed file's label).
	Path string
	// To is the new name of a rename or publish; else empty.
	To string
	// Err reports whether the operation failed.
	Err bool
}

// String formats the operation as "kind path[ -> to][ (failed)]".
func (o Op) String() string {
	s := o.Kind + " " + o.Path
	if o.To != "" {
		s += " -> " + o.To
	}
	if o.Err {
		s += " (failed)"
	}
	return s
}

// Recorder is an [atomicfile.FS] that performs every operation on FS and
// records the ones that change files (reads are not recorded). It is safe for
// concurrent use.
type Recorder struct {
	FS   atomicfile.FS // where operations go; nil means atomicfile.OS
	Root string        // recorded paths are made relative to it

	mu  sync.Mutex
	ops []Op
}

var _ atomicfile.FS = (*Recorder)(nil)

// Ops returns a copy of the operations recorded so far, in order.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Reset forgets the operations recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.ops = nil
	r.mu.Unlock()
}

func (r *Recorder) fs() atomicfile.FS {
	if r.FS == nil {
		return atomicfile.OS
	}
	return r.FS
}

func (r *Recorder) rel(p string) string {
	if r.Root != "" {
		if q, err := filepath.Rel(r.Root, p); err == nil && !strings.HasPrefix(q, "..") {
			p = q
		}
	}
	return filepath.ToSlash(p)
}

func (r *Recorder) record(kind, path, to string, err error) {
	op := Op{Kind: kind, Path: r.rel(path), Err: err != nil}
	if to != "" {
		op.To = r.rel(to)
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// CreateTemp implements [atomicfile.FS].
func (r *Recorder) CreateTemp(dir string, perm fs.FileMode) (atomicfile.File, error) {
	f, err := r.fs().CreateTemp(dir, perm)
	if err != nil {
		r.record("create", dir, "", err)
		return nil, err
	}
	r.record("create", f.Name(), "", nil)
	return &file{File: f, r: r}, nil
}

// OpenFile implements [atomicfile.FS].
func (r *Recorder) OpenFile(path string, flag int, perm fs.FileMode) (atomicfile.File, error) {
	f, err := r.fs().OpenFile(path, flag, perm)
	r.record("open", path, "", err)
	if err != nil {
		return nil, err
	}
	return &file{File: f, r: r}, nil
}

// Mkdir implements [atomicfile.FS].
func (r *Recorder) Mkdir(path string, perm fs.FileMode) error {
	err := r.fs().Mkdir(path, perm)
	r.record("mkdir", path, "", err)
	return err
}

// Rename implements [atomicfile.FS].
func (r *Recorder) Rename(oldpath, newpath string) error {
	err := r.fs().Rename(oldpath, newpath)
	r.record("rename", oldpath, newpath, err)
	return err
}

// RenameNoReplace implements [atomicfile.FS].
func (r *Recorder) RenameNoReplace(oldpath, newpath string) error {
	err := r.fs().RenameNoReplace(oldpath, newpath)
	r.record("publish", oldpath, newpath, err)
	return err
}

// Remove implements [atomicfile.FS].
func (r *Recorder) Remove(path string) error {
	err := r.fs().Remove(path)
	r.record("remove", path, "", err)
	return err
}

// Chtimes implements [atomicfile.FS].
func (r *Recorder) Chtimes(path string, t time.Time) error {
	err := r.fs().Chtimes(path, t)
	r.record("chtimes", path, "", err)
	return err
}

// SyncDir implements [atomicfile.FS].
func (r *Recorder) SyncDir(dir string) error {
	err := r.fs().SyncDir(dir)
	r.record("syncdir", dir, "", err)
	return err
}

// SyncFS implements [atomicfile.FS].
func (r *Recorder) SyncFS(path string) error {
	err := r.fs().SyncFS(path)
	r.record("syncfs", path, "", err)
	return err
}

// CreateUnnamed implements [atomicfile.FS].
func (r *Recorder) CreateUnnamed(dir string, perm fs.FileMode) (atomicfile.File, error) {
	f, err := r.fs().CreateUnnamed(dir, perm)
	if err != nil {
		r.record("createunnamed", dir, "", err)
		return nil, err
	}
	r.record("createunnamed", f.Name(), "", nil)
	return &file{File: f, r: r}, nil
}

// Link implements [atomicfile.FS], recorded as a publish.
func (r *Recorder) Link(f atomicfile.File, path string) error {
	inner := f
	if rf, ok := f.(*file); ok {
		inner = rf.File
	}
	err := r.fs().Link(inner, path)
	r.record("publish", f.Name(), path, err)
	return err
}

// file records the writes, syncs and closes of an open file.
type file struct {
	atomicfile.File
	r *Recorder
}

func (f *file) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.r.record("write", f.Name(), "", err)
	return n, err
}

func (f *file) Truncate(size int64) error {
	err := f.File.Truncate(size)
	f.r.record("truncate", f.Name(), "", err)
	return err
}

func (f *file) SetModTime(t time.Time) error {
	err := f.File.SetModTime(t)
	f.r.record("mtime", f.Name(), "", err)
	return err
}

func (f *file) Sync() error {
	err := f.File.Sync()
	f.r.record("sync", f.Name(), "", err)
	return err
}

func (f *file) Close() error {
	err := f.File.Close()
	f.r.record("close", f.Name(), "", err)
	return err
}
