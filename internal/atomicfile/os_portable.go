//go:build !unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// OS is the real filesystem through package os. Outside Unix a folder
// cannot be synced (Windows has no fsync of a directory; NTFS journals its
// metadata), so SyncDir does nothing, and SyncFS reports
// [errors.ErrUnsupported].
var OS FS = portableFS{}

// Portable is [OS]: outside Unix there is one path.
var Portable FS = OS

type portableFS struct{}

func (portableFS) CreateTemp(dir string, perm fs.FileMode) (File, error) {
	for {
		f, err := os.OpenFile(tempName(dir), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return portableFile{f}, nil
	}
}

func (portableFS) OpenFile(path string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return portableFile{f}, nil
}

func (portableFS) Mkdir(path string, perm fs.FileMode) error { return os.Mkdir(path, perm) }

func (portableFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// RenameNoReplace links the new name, which never overwrites, then removes
// the old one.
func (portableFS) RenameNoReplace(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			le.Op = "publish"
		}
		return err
	}
	// The file is published; a leftover temporary name is harmless.
	os.Remove(oldpath)
	return nil
}

func (portableFS) Remove(path string) error { return os.Remove(path) }

func (portableFS) Chtimes(path string, t time.Time) error { return os.Chtimes(path, t, t) }

func (portableFS) SyncDir(dir string) error { return nil }

func (portableFS) SyncFS(path string) error {
	return &fs.PathError{Op: "syncfs", Path: path, Err: errors.ErrUnsupported}
}

// CreateUnnamed reports [errors.ErrUnsupported]: unnamed files are Linux's.
func (portableFS) CreateUnnamed(dir string, perm fs.FileMode) (File, error) {
	return nil, &fs.PathError{Op: "createunnamed", Path: dir, Err: errors.ErrUnsupported}
}

// Link reports [errors.ErrUnsupported], as CreateUnnamed does.
func (portableFS) Link(f File, path string) error {
	return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: errors.ErrUnsupported}
}

// portableFile is an *os.File as a [File].
type portableFile struct{ *os.File }

func (f portableFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f portableFile) SetModTime(t time.Time) error { return os.Chtimes(f.Name(), t, t) }

// SpreadSubdirs is Linux-only (FS_TOPDIR_FL, for ext2/3/4): elsewhere the
// filesystem places folders as it will.
func SpreadSubdirs(dir string) error { return errors.ErrUnsupported }
