//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uncaged/uwf/internal/rawfile"
)

// OS is the real filesystem. Its files are plain file descriptors (no
// poller, no buffering), which keeps the hot write path to the system calls
// it needs. On Linux, RenameNoReplace is renameat2(2) with RENAME_NOREPLACE
// and SyncFS is syncfs(2); elsewhere they are the portable paths of
// [Portable].
var OS FS = osFS{}

// Portable is the real filesystem through the calls every Unix has, which is
// what macOS and the BSDs run: RenameNoReplace is link(2) then unlink(2) of
// the old name, and SyncFS reports [errors.ErrUnsupported], so callers sync
// each file. Tests on Linux use it to prove the portable path.
var Portable FS = osFS{portable: true}

// osFS is the real filesystem; portable switches off the Linux-only calls.
type osFS struct{ portable bool }

func (osFS) CreateTemp(dir string, perm fs.FileMode) (File, error) {
	for {
		name := tempName(dir)
		fd, err := open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL, uint32(perm.Perm()))
		if err == syscall.EEXIST {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "createtemp", Path: name, Err: err}
		}
		return &osFile{fd: fd, name: name}, nil
	}
}

func (osFS) OpenFile(path string, flag int, perm fs.FileMode) (File, error) {
	fd, err := open(path, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &osFile{fd: fd, name: path}, nil
}

func (osFS) Mkdir(path string, perm fs.FileMode) error {
	if err := ignoringEINTR(func() error { return syscall.Mkdir(path, uint32(perm.Perm())) }); err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	return nil
}

func (osFS) Rename(oldpath, newpath string) error {
	if err := ignoringEINTR(func() error { return syscall.Rename(oldpath, newpath) }); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

func (o osFS) RenameNoReplace(oldpath, newpath string) error {
	err := errNoRenameat2
	if !o.portable {
		err = renameNoReplace(oldpath, newpath)
	}
	if err == errNoRenameat2 {
		err = linkRemove(oldpath, newpath)
	}
	if err != nil {
		return &os.LinkError{Op: "publish", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// linkRemove publishes with link(2), which never overwrites, then removes
// the old name.
func linkRemove(oldpath, newpath string) error {
	if err := ignoringEINTR(func() error { return syscall.Link(oldpath, newpath) }); err != nil {
		return err
	}
	// The object is published; a leftover temporary name is harmless (it
	// is cleaned as stale later), so an unlink error is not reported.
	ignoringEINTR(func() error { return syscall.Unlink(oldpath) })
	return nil
}

func (osFS) Remove(path string) error {
	err := ignoringEINTR(func() error { return syscall.Unlink(path) })
	if err == nil {
		return nil
	}
	if err == syscall.EISDIR || err == syscall.EPERM {
		if err1 := ignoringEINTR(func() error { return syscall.Rmdir(path) }); err1 == nil {
			return nil
		} else if err1 != syscall.ENOTDIR {
			err = err1
		}
	}
	return &fs.PathError{Op: "remove", Path: path, Err: err}
}

func (osFS) Chtimes(path string, t time.Time) error {
	if err := utimesNano(path, t); err != nil {
		return &fs.PathError{Op: "chtimes", Path: path, Err: err}
	}
	return nil
}

// utimesNano sets path's access and modification times to t, to the
// nanosecond (utimensat(2)).
func utimesNano(path string, t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	return ignoringEINTR(func() error { return unix.UtimesNano(path, []unix.Timespec{ts, ts}) })
}

func (osFS) SyncDir(dir string) error {
	fd, err := open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err == nil {
		err = ignoringEINTR(func() error { return syscall.Fsync(fd) })
		syscall.Close(fd)
	}
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	return nil
}

func (o osFS) SyncFS(path string) error {
	if o.portable {
		return &fs.PathError{Op: "syncfs", Path: path, Err: errors.ErrUnsupported}
	}
	fd, err := open(path, syscall.O_RDONLY, 0)
	if err == nil {
		err = syncfs(fd)
		syscall.Close(fd)
	}
	if err != nil {
		return &fs.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

func (o osFS) CreateUnnamed(dir string, perm fs.FileMode) (File, error) {
	fd, err := -1, error(errors.ErrUnsupported)
	if !o.portable {
		fd, err = openUnnamed(dir, uint32(perm.Perm()))
	}
	if err != nil {
		return nil, &fs.PathError{Op: "createunnamed", Path: dir, Err: err}
	}
	return &osFile{fd: fd, name: unnamedName(dir), unnamed: true}, nil
}

func (o osFS) Link(f File, path string) error {
	of, ok := f.(*osFile)
	err := error(errors.ErrUnsupported)
	switch {
	case o.portable:
	case !ok || !of.unnamed:
		err = errors.New("not an unnamed file of this filesystem")
	case of.fd < 0:
		err = fs.ErrClosed
	default:
		err = linkUnnamed(of.fd, path)
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}

// osFile is an open file descriptor.
type osFile struct {
	fd      int
	name    string
	unnamed bool // from CreateUnnamed: name is only a label
}

func (f *osFile) Name() string { return f.name }

func (f *osFile) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Write(f.fd, p[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
		}
		if m == 0 {
			return n, &fs.PathError{Op: "write", Path: f.name, Err: io.ErrShortWrite}
		}
		n += m
	}
	return n, nil
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Pread(f.fd, p[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f *osFile) Size() (int64, error) {
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(f.fd, &st) }); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return st.Size, nil
}

func (f *osFile) Truncate(size int64) error {
	if err := ignoringEINTR(func() error { return syscall.Ftruncate(f.fd, size) }); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return nil
}

// SetModTime sets the times through the file's name: a temporary file
// keeps its name until it is published, and x/sys/unix has no portable
// nanosecond call on a descriptor. An unnamed file (Linux only) has no
// name: its times are set through the descriptor.
func (f *osFile) SetModTime(t time.Time) error {
	var err error
	if f.unnamed {
		err = futimesNano(f.fd, t)
	} else {
		err = utimesNano(f.name, t)
	}
	if err != nil {
		return &fs.PathError{Op: "chtimes", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Sync() error {
	if err := ignoringEINTR(func() error { return syscall.Fsync(f.fd) }); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	err := syscall.Close(f.fd)
	f.fd = -1
	if err != nil && err != syscall.EINTR {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// open is open(2) with O_CLOEXEC, retried on EINTR.
func open(path string, flag int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// ignoringEINTR is the one retry loop on EINTR, shared with rawfile.
var ignoringEINTR = rawfile.IgnoringEINTR

// errNoRenameat2 means renameat2(2) with RENAME_NOREPLACE is not available
// here: publish with link(2) instead.
var errNoRenameat2 = errors.New("renameat2 RENAME_NOREPLACE not available")
