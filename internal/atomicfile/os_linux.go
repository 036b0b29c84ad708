package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

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

// openUnnamed opens an unnamed file in dir (O_TMPFILE). A kernel or
// filesystem without O_TMPFILE answers EOPNOTSUPP, EISDIR or EINVAL: the
// error then wraps [errors.ErrUnsupported].
func openUnnamed(dir string, perm uint32) (int, error) {
	fd, err := open(dir, unix.O_TMPFILE|unix.O_RDWR, perm)
	switch err {
	case nil:
		return fd, nil
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL:
		return -1, fmt.Errorf("%w: O_TMPFILE: %w", errors.ErrUnsupported, err)
	}
	return -1, err
}

// How an unnamed file is linked here, learnt at the first link: linkat(2)
// with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (else ENOENT); without it,
// linking /proc/self/fd/N with AT_SYMLINK_FOLLOW does the same.
const (
	linkUnknown int32 = iota
	linkEmptyPath
	linkProc
	linkNone // neither: no capability and no /proc
)

var linkMode atomic.Int32

// linkUnnamed gives the unnamed file fd the name path, never overwriting
// (EEXIST).
func linkUnnamed(fd int, path string) error {
	mode := linkMode.Load()
	if mode == linkNone {
		return fmt.Errorf("%w: cannot link an unnamed file (no CAP_DAC_READ_SEARCH, no /proc)", errors.ErrUnsupported)
	}
	if mode != linkProc {
		err := ignoringEINTR(func() error { return unix.Linkat(fd, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH) })
		if err == nil {
			linkMode.CompareAndSwap(linkUnknown, linkEmptyPath)
			return nil
		}
		if mode == linkEmptyPath || err != unix.ENOENT && err != unix.EPERM {
			return err
		}
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	err := ignoringEINTR(func() error { return unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW) })
	if err == nil {
		linkMode.CompareAndSwap(linkUnknown, linkProc)
		return nil
	}
	if mode == linkUnknown && err == unix.ENOENT {
		// Either path's folder is missing or /proc is.
		var st unix.Stat_t
		if unix.Lstat(proc, &st) != nil {
			linkMode.Store(linkNone)
			return fmt.Errorf("%w: cannot link an unnamed file (no CAP_DAC_READ_SEARCH, no /proc)", errors.ErrUnsupported)
		}
	}
	return err
}

// futimesNano sets the access and modification times of the file open as
// fd to t, to the nanosecond: utimensat(2) with a NULL path, which is
// futimens(3).
func futimesNano(fd int, t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return ignoringEINTR(func() error {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
}

// fsTopdirFL is FS_TOPDIR_FL (chattr +T): "the top of a directory
// hierarchy", a hint to ext2/3/4's Orlov allocator to place each new
// subfolder of the folder in a lightly used block group.
const fsTopdirFL = 0x00020000

// SpreadSubdirs marks the folder dir as the top of a hierarchy (the
// FS_TOPDIR_FL flag, chattr +T) so that ext2/3/4 places each subfolder made
// in it afterwards in a lightly used block group, with the files later made
// in that subfolder, rather than next to dir. It is a placement hint only:
// nothing reads the flag back, and on a filesystem without it the error
// wraps [errors.ErrUnsupported]. A flag already set is left as it is.
func SpreadSubdirs(dir string) error {
	fd, err := open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err == nil && flags&fsTopdirFL == 0 {
		err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL))
	}
	switch err {
	case unix.ENOTTY, unix.EOPNOTSUPP, unix.EINVAL:
		return fmt.Errorf("%w: FS_TOPDIR_FL on %s: %w", errors.ErrUnsupported, dir, err)
	case nil:
		return nil
	}
	return fmt.Errorf("FS_TOPDIR_FL on %s: %w", dir, err)
}
