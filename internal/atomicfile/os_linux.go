package atomicfile

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noRenameat2 is set once the kernel has said it has no renameat2(2).
var noRenameat2 atomic.Bool

// renameNoReplace calls renameat2(AT_FDCWD, oldpath, AT_FDCWD, newpath,
// RENAME_NOREPLACE). It returns errNoRenameat2 if the kernel lacks the call
// (ENOSYS) or the filesystem the flag (EINVAL).
func renameNoReplace(oldpath, newpath string) error {
	if noRenameat2.Load() {
		return errNoRenameat2
	}
	err := ignoringEINTR(func() error {
		return unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	})
	switch err {
	case unix.ENOSYS:
		noRenameat2.Store(true)
		return errNoRenameat2
	case unix.EINVAL:
		return errNoRenameat2
	}
	return err
}

// syncfs calls syncfs(2) on fd.
func syncfs(fd int) error {
	err := ignoringEINTR(func() error { return unix.Syncfs(fd) })
	if err == unix.ENOSYS {
		return errors.ErrUnsupported
	}
	return err
}
