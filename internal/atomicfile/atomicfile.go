package atomicfile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"
)

// File is an open file, as [FS] returns it. Writes are not buffered.
type File interface {
	// Name returns the path the file was opened or created with.
	Name() string
	// Write writes all of p (a short write is an error).
	Write(p []byte) (int, error)
	// ReadAt reads len(p) bytes at off; at the end of the file it returns
	// fewer and [io.EOF].
	ReadAt(p []byte, off int64) (int, error)
	// Size returns the file's current size.
	Size() (int64, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// SetModTime sets the file's access and modification times to t.
	SetModTime(t time.Time) error
	// Sync commits the file's contents and metadata to stable storage
	// (fsync(2)).
	Sync() error
	// Close closes the file; further calls fail.
	Close() error
}

// FS is the set of filesystem operations the helpers, and the disk store's
// write paths, use. Errors are *[fs.PathError] or *[os.LinkError] values
// wrapping the system error, so [errors.Is] with [fs.ErrExist] and
// [fs.ErrNotExist] works.
type FS interface {
	// CreateTemp creates a new empty file with a unique name in dir, open
	// for reading and writing, with permissions perm (before the umask).
	CreateTemp(dir string, perm fs.FileMode) (File, error)
	// OpenFile opens path with the given os.O_* flags; perm is used when the
	// file is created.
	OpenFile(path string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates one folder.
	Mkdir(path string, perm fs.FileMode) error
	// Rename renames oldpath to newpath, atomically replacing any file
	// there.
	Rename(oldpath, newpath string) error
	// RenameNoReplace renames oldpath to newpath unless newpath exists, in
	// which case the error wraps [fs.ErrExist] and nothing changes. It never
	// overwrites, even when racing other processes.
	RenameNoReplace(oldpath, newpath string) error
	// Remove removes a file or an empty folder.
	Remove(path string) error
	// Chtimes sets path's access and modification times to t.
	Chtimes(path string, t time.Time) error
	// SyncDir commits a folder's entries to stable storage (fsync(2) on the
	// folder).
	SyncDir(dir string) error
	// SyncFS commits everything written to the filesystem that holds path
	// (syncfs(2)). Where that is not available the error wraps
	// [errors.ErrUnsupported].
	SyncFS(path string) error
	// CreateUnnamed creates a new empty file with no name in the folder
	// dir (open(2) with O_TMPFILE), open for reading and writing, with
	// permissions perm (before the umask). Until [FS.Link] names it, no
	// other process can see it, and closing it or a crash frees it. Where
	// the system or dir's filesystem has no unnamed files the error wraps
	// [errors.ErrUnsupported]; callers then use [FS.CreateTemp].
	CreateUnnamed(dir string, perm fs.FileMode) (File, error)
	// Link gives f, an open file from [FS.CreateUnnamed], the name path on
	// the filesystem it was created on (linkat(2)), never overwriting: if path
	// exists the error wraps [fs.ErrExist] and nothing changes. f stays
	// open and may be linked again (under a temporary name, say). Where
	// unnamed files cannot be linked here the error wraps
	// [errors.ErrUnsupported].
	Link(f File, path string) error
}

// DefaultPerm is the permissions of the files the helpers write unless told
// otherwise (before the umask).
const DefaultPerm fs.FileMode = 0o644

// WriteTempFile creates a temporary file in dir (mode [DefaultPerm]) and
// writes data to it; unless mtime is zero it then sets the file's
// modification time to mtime. The file is returned open and not synced: the
// caller syncs and closes it (or closes and removes it). On error nothing is
// left behind.
func WriteTempFile(fsys FS, dir string, data []byte, mtime time.Time) (File, error) {
	return writeTempFile(fsys, dir, data, mtime, DefaultPerm)
}

func writeTempFile(fsys FS, dir string, data []byte, mtime time.Time, perm fs.FileMode) (File, error) {
	f, err := fsys.CreateTemp(dir, perm)
	if err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err == nil && !mtime.IsZero() {
		err = f.SetModTime(mtime)
	}
	if err != nil {
		f.Close()
		fsys.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// WriteTemp writes data to a new temporary file in dir, with modification
// time mtime unless it is zero, syncs it if sync is set, closes it and
// returns its path. On error nothing is left behind.
func WriteTemp(fsys FS, dir string, data []byte, mtime time.Time, sync bool) (string, error) {
	return writeTemp(fsys, dir, data, mtime, DefaultPerm, sync)
}

func writeTemp(fsys FS, dir string, data []byte, mtime time.Time, perm fs.FileMode, sync bool) (string, error) {
	f, err := writeTempFile(fsys, dir, data, mtime, perm)
	if err != nil {
		return "", err
	}
	return f.Name(), closeTemp(fsys, f, sync)
}

// closeTemp syncs (if sync) and closes f; on error it removes it.
func closeTemp(fsys FS, f File, sync bool) error {
	var err error
	if sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(f.Name())
	}
	return err
}

// PublishTemp gives the complete temporary file tmp the name path, never
// overwriting. If path exists the error wraps [fs.ErrExist] and tmp is left
// in place for the caller to remove or use. If path's folder is missing it is
// created first with [MkdirAll] (sync as given). PublishTemp does not sync
// path's folder: callers that publish many files sync each folder once.
func PublishTemp(fsys FS, tmp, path string, sync bool) error {
	err := fsys.RenameNoReplace(tmp, path)
	if errors.Is(err, fs.ErrNotExist) {
		if merr := MkdirAll(fsys, filepath.Dir(path), sync); merr != nil {
			return merr
		}
		err = fsys.RenameNoReplace(tmp, path)
	}
	return err
}

// WriteUnnamed creates an unnamed file in dir ([FS.CreateUnnamed]), writes
// data to it and, unless mtime is zero, sets its modification time. The file
// is returned open and not synced; the caller names it with [FS.Link] or
// [LinkTemp], or closes it, which discards it. The error wraps
// [errors.ErrUnsupported] where unnamed files are not available.
func WriteUnnamed(fsys FS, dir string, data []byte, mtime time.Time) (File, error) {
	f, err := fsys.CreateUnnamed(dir, DefaultPerm)
	if err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err == nil && !mtime.IsZero() {
		err = f.SetModTime(mtime)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// LinkTemp gives the unnamed file f a new temporary name in dir (on the
// filesystem it was created on, see [FS.Link]) and returns it: the way to rename an
// unnamed file over an existing one.
func LinkTemp(fsys FS, f File, dir string) (string, error) {
	for {
		name := tempName(dir)
		err := fsys.Link(f, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
}

// Publish writes data at path without ever overwriting: a temporary file in
// tmpDir (path's folder, created if missing, if tmpDir is ""), with
// modification time mtime unless it is zero, synced if sync, published with
// [PublishTemp], then path's folder synced if sync. If path exists the
// temporary file is removed and the error wraps [fs.ErrExist].
func Publish(fsys FS, tmpDir, path string, data []byte, mtime time.Time, sync bool) error {
	tmp, err := writeTempFor(fsys, tmpDir, path, data, mtime, DefaultPerm, sync)
	if err != nil {
		return err
	}
	if err := PublishTemp(fsys, tmp, path, sync); err != nil {
		fsys.Remove(tmp)
		return err
	}
	if sync {
		return fsys.SyncDir(filepath.Dir(path))
	}
	return nil
}

// ReplaceTemp renames the complete temporary file tmp to path, atomically
// replacing any file there, creating path's folder if it is missing, and
// syncs the folder if sync. On error tmp is removed.
func ReplaceTemp(fsys FS, tmp, path string, sync bool) error {
	err := fsys.Rename(tmp, path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = MkdirAll(fsys, filepath.Dir(path), sync); err == nil {
			err = fsys.Rename(tmp, path)
		}
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	if sync {
		return fsys.SyncDir(filepath.Dir(path))
	}
	return nil
}

// Replace writes data at path atomically, replacing any file there: a
// temporary file in tmpDir (path's folder, created if missing, if tmpDir is
// ""; it must be on the same filesystem), synced if sync, renamed over path,
// then path's folder synced if sync. A crash leaves the old file or the new
// one. The new file has mode [DefaultPerm] before the umask.
func Replace(fsys FS, tmpDir, path string, data []byte, sync bool) error {
	return ReplacePerm(fsys, tmpDir, path, data, DefaultPerm, sync)
}

// ReplacePerm is [Replace] with the new file's permissions (before the
// umask): the temporary file is created with them, so data is never readable
// beyond perm, not even before the rename (config files holding secrets use
// 0o600).
func ReplacePerm(fsys FS, tmpDir, path string, data []byte, perm fs.FileMode, sync bool) error {
	tmp, err := writeTempFor(fsys, tmpDir, path, data, time.Time{}, perm, sync)
	if err != nil {
		return err
	}
	return ReplaceTemp(fsys, tmp, path, sync)
}

// writeTempFor writes the temporary file that will become path: in tmpDir,
// or, if tmpDir is "", in path's folder, which is created if it is missing.
func writeTempFor(fsys FS, tmpDir, path string, data []byte, mtime time.Time, perm fs.FileMode, sync bool) (string, error) {
	if tmpDir != "" {
		return writeTemp(fsys, tmpDir, data, mtime, perm, sync)
	}
	dir := filepath.Dir(path)
	tmp, err := writeTemp(fsys, dir, data, mtime, perm, sync)
	if errors.Is(err, fs.ErrNotExist) {
		if err := MkdirAll(fsys, dir, sync); err != nil {
			return "", err
		}
		tmp, err = writeTemp(fsys, dir, data, mtime, perm, sync)
	}
	return tmp, err
}

// MkdirAll creates the folder path and any missing parents (mode 0o755
// before the umask). When sync is set, each folder's parent is synced after
// the folder is created in it, so the new folders survive a crash. An
// existing folder is not an error.
func MkdirAll(fsys FS, path string, sync bool) error {
	err := fsys.Mkdir(path, 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		if err == nil && sync {
			return fsys.SyncDir(filepath.Dir(path))
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(path)
	if parent == path {
		return err
	}
	if err := MkdirAll(fsys, parent, sync); err != nil {
		return err
	}
	err = fsys.Mkdir(path, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err == nil && sync {
		err = fsys.SyncDir(parent)
	}
	return err
}

// ErrNoAttr reports that a file has no such extended attribute ([GetAttr]).
var ErrNoAttr = errors.New("no such extended attribute")
